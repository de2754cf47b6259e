//! Where the server's data lives in the engine's one ordered key space
//! (docs/formats/resp-collections.md).
//!
//! - A key's top-level record (a string, or a collection's metadata) is stored at the
//!   key itself, so strings cost no extra bytes and keys sort as the client's bytes do.
//!   A key starting with [`RESERVED`] is stored escaped (`RESERVED, 0x00, rest`).
//! - A collection's members are stored after every key, under `RESERVED` and a tag:
//!   `RESERVED, tag, len(key) as u32 BE, key, version as u64 BE, member`. Each
//!   collection's members are one contiguous, ordered range per version, and a
//!   collection dropped or recreated under a new version leaves its old range to be
//!   removed by compaction.
//!
//! Owns: the mapping between client keys and engine keys. Must not touch: the values.

use std::borrow::Cow;

/// The first bytes of every engine key that is not a client's key as it is.
pub const RESERVED: [u8; 2] = [0xff, 0xff];

/// After [`RESERVED`]: a client key that itself starts with `RESERVED`.
const ESCAPED: u8 = 0x00;

/// What a member record belongs to, the byte after [`RESERVED`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Sub {
    /// A hash field; the value is the field's value.
    HashField = 0x01,
    /// A set member; the value is empty.
    SetMember = 0x02,
    /// A sorted-set member; the value is its score ([`score_bytes`]).
    ZsetMember = 0x03,
    /// A sorted set's score index: the score ([`score_bytes`]) then the member; the value
    /// is empty.
    ZsetScore = 0x04,
    /// A list element at its index (`u64` big-endian); the value is the element.
    ListElement = 0x05,
}

impl Sub {
    fn from_byte(b: u8) -> Option<Sub> {
        match b {
            0x01 => Some(Sub::HashField),
            0x02 => Some(Sub::SetMember),
            0x03 => Some(Sub::ZsetMember),
            0x04 => Some(Sub::ZsetScore),
            0x05 => Some(Sub::ListElement),
            _ => None,
        }
    }
}

/// The engine key of `key`'s top-level record.
pub fn top(key: &[u8]) -> Cow<'_, [u8]> {
    match key.strip_prefix(&RESERVED) {
        None => Cow::Borrowed(key),
        Some(rest) => {
            let mut out = Vec::with_capacity(key.len() + 1);
            out.extend_from_slice(&RESERVED);
            out.push(ESCAPED);
            out.extend_from_slice(rest);
            Cow::Owned(out)
        }
    }
}

/// The engine keys of top-level records end before this one.
pub fn top_end() -> [u8; 3] {
    [RESERVED[0], RESERVED[1], ESCAPED + 1]
}

/// The client key of a top-level record's engine key; `None` for a member record.
pub fn client_key(engine_key: &[u8]) -> Option<Cow<'_, [u8]>> {
    match engine_key.strip_prefix(&RESERVED) {
        None => Some(Cow::Borrowed(engine_key)),
        Some([ESCAPED, rest @ ..]) => {
            let mut out = Vec::with_capacity(engine_key.len() - 1);
            out.extend_from_slice(&RESERVED);
            out.extend_from_slice(rest);
            Some(Cow::Owned(out))
        }
        Some(_) => None,
    }
}

/// A member record's engine key: on the stack up to 64 bytes (15 bytes of prefix, then
/// a collection key and member of up to 49 bytes together), so that building one for
/// each member a command names allocates nothing.
pub type MemberKeyBuf = smallvec::SmallVec<[u8; 64]>;

/// The prefix of every member record of `key`'s collection at `version`.
pub fn members(sub: Sub, key: &[u8], version: u64) -> Vec<u8> {
    member_of_parts(sub, key, version, &[]).into_vec()
}

/// The engine key of `member` of `key`'s collection at `version`.
pub fn member(sub: Sub, key: &[u8], version: u64, member: &[u8]) -> MemberKeyBuf {
    member_of_parts(sub, key, version, &[member])
}

/// The engine key of `key`'s collection member at `version` whose bytes are `parts`
/// joined (a sorted set's index record is the score's bytes, then the member).
pub fn member_of_parts(sub: Sub, key: &[u8], version: u64, parts: &[&[u8]]) -> MemberKeyBuf {
    let len = RESERVED.len() + 13 + key.len() + parts.iter().map(|p| p.len()).sum::<usize>();
    // Filled in place, slice by slice: `SmallVec::extend_from_slice` costs a call to
    // `memmove` and one to `memcpy` per piece, several times the copy itself.
    let mut buf = [0u8; 64];
    match buf.get_mut(..len) {
        Some(out) => {
            fill_member_key(out, sub, key, version, parts);
            MemberKeyBuf::from_buf_and_len(buf, len)
        }
        None => {
            let mut out = vec![0; len];
            fill_member_key(&mut out, sub, key, version, parts);
            MemberKeyBuf::from_vec(out)
        }
    }
}

/// Writes a member key into `out`, exactly as long as it.
fn fill_member_key(out: &mut [u8], sub: Sub, key: &[u8], version: u64, parts: &[&[u8]]) {
    let key_len = u32::try_from(key.len()).unwrap_or(u32::MAX).to_be_bytes();
    let mut rest = out;
    let pieces = [
        &RESERVED[..],
        &[sub as u8],
        &key_len,
        key,
        &version.to_be_bytes(),
    ];
    for piece in pieces.iter().chain(parts) {
        let n = piece.len().min(rest.len());
        let (dst, tail) = std::mem::take(&mut rest).split_at_mut(n);
        dst.copy_from_slice(piece.get(..dst.len()).unwrap_or_default());
        rest = tail;
    }
}

/// The engine key of `member` of `key`'s collection at `version`, stored after its
/// hash ([`hashed`]): a hash field's, a set member's or a sorted set's member record.
pub fn hashed_member(sub: Sub, key: &[u8], version: u64, member: &[u8]) -> MemberKeyBuf {
    let hash = member_hash(member).to_be_bytes();
    member_of_parts(sub, key, version, &[&hash, member])
}

/// The first key after every key starting with `prefix` (`None`: no such key).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// The exclusive end of the member records under `prefix` whose bytes after it sort
/// before `below` (all of them if `None`).
pub fn members_end(prefix: &[u8], below: Option<&[u8]>) -> Option<Vec<u8>> {
    match below {
        Some(b) => {
            let mut end = prefix.to_vec();
            end.extend_from_slice(b);
            Some(end)
        }
        None => prefix_end(prefix),
    }
}

/// A hash field's or set member's bytes in its record's key: its [`member_hash`] first,
/// so that members are stored in hash order and a scan can resume at a hash (a cursor
/// that needs no state on the server), then the member itself.
pub fn hashed(member: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + member.len());
    out.extend_from_slice(&member_hash(member).to_be_bytes());
    out.extend_from_slice(member);
    out
}

/// Splits a [`hashed`] member into its hash and the member; `None` if too short.
pub fn unhash(stored: &[u8]) -> Option<(u64, &[u8])> {
    let hash = u64::from_be_bytes(stored.get(..8)?.try_into().ok()?);
    Some((hash, stored.get(8..)?))
}

/// The hash members are ordered by: 64-bit FNV-1a, then MurmurHash3's 64-bit finaliser
/// (FNV alone leaves short members that differ in one byte close together, which would
/// make a seek to a random hash land on the same member nearly every time). Part of the
/// stored format, so it never changes.
pub fn member_hash(member: &[u8]) -> u64 {
    let mut h = member.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// A score as 8 bytes that sort as the scores do (negative scores with every bit
/// flipped, the others with the sign bit set; -0 as 0). Scores are never NaN.
pub fn score_bytes(score: f64) -> [u8; 8] {
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    ordered.to_be_bytes()
}

/// The score of [`score_bytes`]; `None` if `b` is not 8 bytes.
pub fn score_of(b: &[u8]) -> Option<f64> {
    let ordered = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
    let bits = if ordered >> 63 == 1 {
        ordered & !(1 << 63)
    } else {
        !ordered
    };
    Some(f64::from_bits(bits))
}

/// Server bookkeeping records (not a client's, not a member's): `RESERVED, 0x7f, name`.
pub fn bookkeeping(name: &[u8]) -> Vec<u8> {
    let mut out = RESERVED.to_vec();
    out.push(0x7f);
    out.extend_from_slice(name);
    out
}

/// A member record's engine key, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberKey<'a> {
    /// What it belongs to.
    pub sub: Sub,
    /// The collection's client key.
    pub key: &'a [u8],
    /// The collection's version it was written under.
    pub version: u64,
    /// The member (field, element) itself.
    pub member: &'a [u8],
}

/// Parses a member record's engine key; `None` for any other key.
pub fn parse_member(engine_key: &[u8]) -> Option<MemberKey<'_>> {
    let rest = engine_key.strip_prefix(&RESERVED)?;
    let (&tag, rest) = rest.split_first()?;
    let sub = Sub::from_byte(tag)?;
    let len = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let rest = rest.get(4..)?;
    let key = rest.get(..len)?;
    let version = u64::from_be_bytes(rest.get(len..len + 8)?.try_into().ok()?);
    let member = rest.get(len + 8..)?;
    Some(MemberKey {
        sub,
        key,
        version,
        member,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `member_hash(b"a")`, computed once by hand from FNV-1a and the finaliser.
    const MEMBER_HASH_OF_A: u64 = 0x82a2_a958_a9be_ce5b;

    #[test]
    fn top_level_keys_round_trip_and_keep_their_order() {
        let keys: [&[u8]; 6] = [
            b"",
            b"a",
            b"\xff",
            b"\xff\xff",
            b"\xff\xff\x00",
            b"\xff\xff\xff",
        ];
        let mut engine: Vec<Vec<u8>> = keys.iter().map(|k| top(k).into_owned()).collect();
        for (k, e) in keys.iter().zip(&engine) {
            assert_eq!(client_key(e).as_deref(), Some(*k));
            assert!(e.as_slice() < top_end().as_slice());
        }
        let sorted = engine.clone();
        engine.sort();
        assert_eq!(engine, sorted, "escaping keeps the client keys' order");
    }

    #[test]
    fn members_sort_after_every_key_and_parse_back() {
        let m = member(Sub::HashField, b"\xff\xffk", 7, b"field");
        assert!(m.as_slice() >= top_end().as_slice());
        assert_eq!(client_key(&m), None);
        let p = parse_member(&m).unwrap();
        assert_eq!(
            (p.sub, p.key, p.version, p.member),
            (Sub::HashField, &b"\xff\xffk"[..], 7, &b"field"[..])
        );
        // A key that is a prefix of another does not share its members' range.
        let a = members(Sub::HashField, b"a", 1);
        let ab = member(Sub::HashField, b"ab", 1, b"");
        assert!(!ab.starts_with(&a));
        assert_eq!(parse_member(b"plain"), None);
        assert_eq!(parse_member(&m[..m.len() - 7]), None);
        assert_eq!(prefix_end(b"a\xff").as_deref(), Some(&b"b"[..]));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        let h = hashed(b"f");
        assert_eq!(unhash(&h), Some((member_hash(b"f"), &b"f"[..])));
        // Built in one piece, a hashed member's key is the key of its hashed bytes.
        for m in [&b""[..], b"f", b"a longer member than a word"] {
            assert_eq!(
                hashed_member(Sub::SetMember, b"k", 7, m),
                member(Sub::SetMember, b"k", 7, &hashed(m))
            );
        }
        assert_eq!(
            member_of_parts(Sub::ZsetScore, b"k", 7, &[b"ab", b"", b"c"]),
            member(Sub::ZsetScore, b"k", 7, b"abc")
        );
        assert_eq!(unhash(b"short"), None);
        // The format depends on the hash never changing (FNV-1a of "a" is
        // 0xaf63dc4c8601ec8c; this is its finalised value).
        assert_eq!(member_hash(b"a"), MEMBER_HASH_OF_A);
        // One-byte members spread over the whole range.
        let spread = [b"1", b"2", b"3"].map(|m| member_hash(m));
        assert!(
            spread.iter().any(|&h| h < u64::MAX / 2) && spread.iter().any(|&h| h > u64::MAX / 2)
        );
        assert!(bookkeeping(b"v").as_slice() > top_end().as_slice());
        let scores = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            3.0,
            f64::INFINITY,
        ];
        let encoded: Vec<[u8; 8]> = scores.iter().map(|&s| score_bytes(s)).collect();
        assert!(
            encoded.windows(2).all(|w| w[0] <= w[1]),
            "scores sort as bytes"
        );
        for s in scores {
            assert_eq!(
                score_of(&score_bytes(s)),
                Some(if s == 0.0 { 0.0 } else { s })
            );
        }
        assert_eq!(parse_member(&bookkeeping(b"v")), None);
    }
}
