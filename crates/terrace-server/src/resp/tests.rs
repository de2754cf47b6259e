use proptest::prelude::*;

use super::*;

fn encode(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn parse(buf: &[u8]) -> Result<Parsed, ProtocolError> {
    parse_command(buf, &Limits::default())
}

fn args(list: &[&str]) -> Vec<Vec<u8>> {
    list.iter().map(|s| s.as_bytes().to_vec()).collect()
}

#[test]
fn multibulk_and_pipelines() {
    let mut buf = encode(&args(&["SET", "k", "v"]));
    let first_len = buf.len();
    buf.extend_from_slice(b"PING\r\n");
    let Ok(Parsed::Command { args: a, consumed }) = parse(&buf) else {
        panic!("expected a command")
    };
    assert_eq!(a, args(&["SET", "k", "v"]));
    assert_eq!(consumed, first_len);
    assert_eq!(
        parse(&buf[consumed..]),
        Ok(Parsed::Command {
            args: args(&["PING"]),
            consumed: 6
        })
    );
}

#[test]
fn multibulk_arguments_are_borrowed_inline_ones_owned() {
    let mut buf = encode(&args(&["SET", "k", "v"]));
    buf.extend_from_slice(b"GET k\r\n");
    let mut borrowed: ArgList = smallvec::smallvec![b"stale".as_slice()];
    let Ok(Frame::Borrowed { consumed }) =
        parse_command_into(&buf, &Limits::default(), &mut borrowed)
    else {
        panic!("expected a multibulk command")
    };
    assert_eq!(borrowed.as_slice(), [b"SET".as_slice(), b"k", b"v"]);
    // The arguments are the buffer's own bytes.
    let range = buf.as_ptr_range();
    assert!(borrowed.iter().all(|a| range.contains(&a.as_ptr())));
    assert_eq!(
        parse_command_into(&buf[consumed..], &Limits::default(), &mut borrowed),
        Ok(Frame::Owned {
            args: args(&["GET", "k"]),
            consumed: 7
        })
    );
    assert!(borrowed.is_empty());
}

#[test]
fn inline_quotes() {
    let r = parse(b"set \"a b\" 'c\\'d' \"\\x41\\n\"\r\n");
    assert_eq!(
        r,
        Ok(Parsed::Command {
            args: vec![
                b"set".to_vec(),
                b"a b".to_vec(),
                b"c'd".to_vec(),
                b"A\n".to_vec()
            ],
            consumed: 27
        })
    );
    assert!(parse(b"get \"abc\r\n").is_err());
    assert_eq!(
        parse(b"\r\n"),
        Ok(Parsed::Command {
            args: vec![],
            consumed: 2
        })
    );
}

#[test]
fn limits_are_errors_not_allocations() {
    // A claimed 4 GiB bulk string is refused at the header, before any body arrives.
    assert_eq!(
        parse(b"*1\r\n$4294967296\r\n"),
        Err(ProtocolError("invalid bulk length".to_string()))
    );
    // A huge claimed array is fine to start (nothing is reserved) but over the limit fails.
    assert_eq!(
        parse(b"*99999999999\r\n"),
        Err(ProtocolError("invalid multibulk length".to_string()))
    );
    let small = Limits {
        proto_max_bulk_len: 4,
        max_args: 2,
        max_inline_bytes: 8,
        unauthenticated: false,
    };
    assert!(parse_command(b"*1\r\n$5\r\nhello\r\n", &small).is_err());
    assert!(parse_command(b"*3\r\n", &small).is_err());
    assert!(parse_command(b"PINGPINGPING", &small).is_err());
    assert_eq!(
        parse_command(b"*1\r\n$4\r\nhel", &small),
        Ok(Parsed::Incomplete)
    );
}

#[test]
fn unauthenticated_limits_refuse_big_claims_at_the_header() {
    let pre = Limits::default().unauthenticated();
    // A 300 MB claim is refused before a byte of its body arrives.
    assert_eq!(
        parse_command(b"*1\r\n$300000000\r\n", &pre),
        Err(ProtocolError("unauthenticated bulk length".to_string()))
    );
    assert_eq!(
        parse_command(b"*11\r\n", &pre),
        Err(ProtocolError(
            "unauthenticated multibulk length".to_string()
        ))
    );
    assert_eq!(
        parse_command(b"a b c d e f g h i j k\r\n", &pre),
        Err(ProtocolError(
            "unauthenticated multibulk length".to_string()
        ))
    );
    // At the limits: ten arguments, a 16 KiB one among them.
    let big = vec![b'x'; 16 * 1024];
    let mut cmd = b"*10\r\n".to_vec();
    for i in 0..10 {
        let a: &[u8] = if i == 0 { &big } else { b"a" };
        cmd.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        cmd.extend_from_slice(a);
        cmd.extend_from_slice(b"\r\n");
    }
    assert!(matches!(
        parse_command(&cmd, &pre),
        Ok(Parsed::Command { .. })
    ));
    // A smaller configured limit stays in force.
    let small = Limits {
        proto_max_bulk_len: 100,
        ..Limits::default()
    }
    .unauthenticated();
    assert_eq!(small.proto_max_bulk_len, 100);
}

#[test]
fn malformed_frames() {
    assert!(parse(b"*1\r\n+OK\r\n").is_err());
    assert!(parse(b"*x\r\n").is_err());
    assert!(parse(b"*1\r\n$-3\r\n").is_err());
    assert!(parse(b"*1\r\n$2\r\nabXY").is_err());
}

#[test]
fn replies_in_both_protocols() {
    let map = Reply::Map(vec![(Reply::Bulk(b"a".to_vec().into()), Reply::Integer(1))]);
    let mut two = Vec::new();
    map.write(Protocol::Resp2, &mut two);
    assert_eq!(two, b"*2\r\n$1\r\na\r\n:1\r\n");
    let mut three = Vec::new();
    map.write(Protocol::Resp3, &mut three);
    assert_eq!(three, b"%1\r\n$1\r\na\r\n:1\r\n");
    let mut nil = Vec::new();
    Reply::Nil.write(Protocol::Resp2, &mut nil);
    Reply::Nil.write(Protocol::Resp3, &mut nil);
    Reply::NilArray.write(Protocol::Resp2, &mut nil);
    Reply::err("bad\r\nline").write(Protocol::Resp2, &mut nil);
    assert_eq!(nil, b"$-1\r\n_\r\n*-1\r\n-ERR bad  line\r\n");
}

/// Redis's `string2ll` on what a length or integer argument can hold: `0`, or an
/// optional `-` and a digit 1-9 then digits, within `i64`.
fn string2ll(b: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(b).ok()?;
    let digits = s.strip_prefix('-').unwrap_or(s);
    let canonical = s == "0"
        || (digits.starts_with(|c: char| ('1'..='9').contains(&c))
            && digits.bytes().all(|c| c.is_ascii_digit()));
    if canonical {
        s.parse().ok()
    } else {
        None
    }
}

proptest! {
    #[test]
    fn decimals_read_as_redis_reads_them(
        text in prop_oneof![
            "-?[0-9]{0,21}",
            "[-+0-9a ]{0,6}",
            Just(i64::MIN.to_string()),
            Just(i64::MAX.to_string()),
            Just("9223372036854775808".to_string()),
            Just("-9223372036854775809".to_string()),
        ],
    ) {
        prop_assert_eq!(super::parser::parse_decimal(text.as_bytes()), string2ll(text.as_bytes()));
    }

    #[test]
    fn round_trip(list in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..8)) {
        let buf = encode(&list);
        let parsed = parse(&buf);
        prop_assert_eq!(parsed, Ok(Parsed::Command { args: list.clone(), consumed: buf.len() }));
        // Every strict prefix is incomplete, never an error or a different command.
        for cut in 0..buf.len() {
            prop_assert_eq!(parse(&buf[..cut]), Ok(Parsed::Incomplete));
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let limits = Limits {
            proto_max_bulk_len: 64,
            max_args: 16,
            max_inline_bytes: 32,
            unauthenticated: false,
        };
        if let Ok(Parsed::Command { consumed, .. }) = parse_command(&bytes, &limits) {
            prop_assert!(consumed <= bytes.len());
        }
    }

    #[test]
    fn mutated_frames_never_panic(
        list in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 1..5),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
    ) {
        let mut buf = encode(&list);
        for (at, b) in flips {
            let i = at % buf.len();
            buf[i] = b;
        }
        if let Ok(Parsed::Command { consumed, .. }) = parse(&buf) {
            prop_assert!(consumed <= buf.len());
        }
    }
}

#[test]
fn lengths_are_read_as_redis_reads_them() {
    let parse = |input: &[u8]| parse_command(input, &Limits::default());
    // Digits with an optional minus sign, nothing else.
    for bad in [
        &b"*1\r\n$+1\r\na\r\n"[..],
        b"*1\r\n$1a\r\na\r\n",
        b"*1\r\n$\r\na\r\n",
        b"*1\r\n$ 1\r\na\r\n",
        b"*1\r\n$99999999999999999999\r\na\r\n",
        b"*+1\r\n$1\r\na\r\n",
        // Leading zeros and -0, which Redis 7.0.15 answers with `invalid bulk length`
        // and `invalid multibulk length`.
        b"*1\r\n$01\r\na\r\n",
        b"*01\r\n$1\r\na\r\n",
        b"*-0\r\n",
        b"*-01\r\n",
    ] {
        assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
    }
    assert_eq!(
        parse(b"*0\r\n"),
        Ok(Parsed::Command {
            args: vec![],
            consumed: 4
        })
    );
    // A count of -1 (or any negative) is an empty command, as in Redis.
    assert_eq!(
        parse(b"*-1\r\n"),
        Ok(Parsed::Command {
            args: vec![],
            consumed: 5
        })
    );
    assert!(parse(b"*-9223372036854775808\r\n").is_ok());
    assert!(parse(b"*-9223372036854775809\r\n").is_err());
}

#[test]
fn doubles_print_as_before_with_the_integer_path() {
    // The integer path must agree with the general one (`{}`) wherever it applies.
    for d in [
        0.0,
        1.0,
        -1.0,
        3.0,
        1e15,
        -1e15,
        9_007_199_254_740_991.0,
        123456.0,
    ] {
        assert_eq!(format_double(d), format!("{d}"), "{d}");
    }
    assert_eq!(format_double(-0.0), "-0");
    assert_eq!(format_double(0.5), "0.5");
    assert_eq!(format_double(1e300), format!("{}", 1e300));
    assert_eq!(format_double(f64::INFINITY), "inf");
    assert_eq!(format_double(f64::NEG_INFINITY), "-inf");
    let mut out = Vec::new();
    Reply::Double(42.0).write(Protocol::Resp2, &mut out);
    assert_eq!(out, b"$2\r\n42\r\n");
    out.clear();
    Reply::Double(-2.5).write(Protocol::Resp3, &mut out);
    assert_eq!(out, b",-2.5\r\n");
}
