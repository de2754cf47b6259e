use super::*;

fn read(bytes: &[u8]) -> Result<Frame> {
    Frame::read_from(&mut &bytes[..], "peer")
}

#[test]
fn frames_round_trip_back_to_back() {
    let a = Frame::new(FrameType::Task, b"{\"id\":1}".to_vec());
    let b = Frame::new(FrameType::Error, Vec::new());
    let mut wire = a.encode().unwrap();
    wire.extend(b.encode().unwrap());
    let mut r = &wire[..];
    assert_eq!(Frame::read_from(&mut r, "peer").unwrap(), a);
    assert_eq!(Frame::read_from(&mut r, "peer").unwrap(), b);
    assert!(r.is_empty());
}

#[test]
fn damaged_truncated_and_forged_frames_are_refused() {
    let good = Frame::new(FrameType::Result, vec![7u8; 100])
        .encode()
        .unwrap();
    // Every single flipped byte is caught: by the magic, type, flags, length or checksum.
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x40;
        assert!(read(&bad).is_err(), "flip at {i} accepted");
    }
    // Every truncation is an I/O error (the connection ended mid-frame), never a frame.
    for n in 0..good.len() {
        assert!(
            matches!(read(&good[..n]), Err(Error::Io { .. })),
            "cut at {n}"
        );
    }
    // An unknown type or a flag, with a checksum made to match, is still refused.
    for (at, value) in [(4usize, 9u8), (5, 1), (6, 1)] {
        let mut forged = good.clone();
        forged[at] = value;
        let body = forged.len() - 4;
        let crc = crc32c::crc32c(&forged[..body]).to_le_bytes();
        forged[body..].copy_from_slice(&crc);
        assert!(
            matches!(read(&forged), Err(Error::Corruption { .. })),
            "byte {at}"
        );
    }
    // A length over the limit is refused before anything is allocated for it.
    let mut huge = good.clone();
    huge[8..12].copy_from_slice(&(MAX_PAYLOAD + 1).to_le_bytes());
    assert!(matches!(read(&huge), Err(Error::Corruption { .. })));
}

#[test]
fn oversized_payloads_are_not_encoded() {
    let f = Frame::new(FrameType::Task, vec![0; MAX_PAYLOAD as usize + 1]);
    assert!(matches!(f.encode(), Err(Error::InvalidArgument(_))));
}
