use super::*;

#[test]
fn drop_prefix_removes_only_matching_keys() {
    let reg = FilterRegistry::new();
    let f = reg.create(DROP_PREFIX, "7573").unwrap(); // "us"
    assert_eq!(f.name(), DROP_PREFIX);
    assert_eq!(f.filter(1, b"user:1", b"v"), FilterDecision::Remove);
    assert_eq!(f.filter(6, b"us", b""), FilterDecision::Remove);
    assert_eq!(f.filter(1, b"u", b"v"), FilterDecision::Keep);
    assert_eq!(f.filter(1, b"order:1", b"v"), FilterDecision::Keep);
}

#[test]
fn drop_prefix_parameters_are_checked() {
    let reg = FilterRegistry::new();
    for bad in ["", "7", "zz", "7g", "é1"] {
        let err = reg.create(DROP_PREFIX, bad).err().unwrap();
        assert!(matches!(err, Error::InvalidArgument(_)), "{bad:?}: {err}");
    }
    assert!(reg.create(DROP_PREFIX, " 0aFF ").is_ok());
}

#[test]
fn spec_round_trips_through_registry_and_json() {
    let f = DropPrefixFilter::new(vec![0x00, 0xab]).unwrap();
    let spec = f.spec();
    assert_eq!(spec.params, "00ab");
    let json = serde_json::to_string(&spec).unwrap();
    let back: FilterSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(back, spec);
    let rebuilt = FilterRegistry::new().create_from_spec(&back).unwrap();
    assert_eq!(
        rebuilt.filter(0, &[0x00, 0xab, 1], b""),
        FilterDecision::Remove
    );
    assert_eq!(rebuilt.filter(0, &[0x00, 0xac], b""), FilterDecision::Keep);
}

struct Upper;
struct UpperFactory;

impl CompactionFilter for Upper {
    fn name(&self) -> &str {
        "upper"
    }
    fn filter(&self, _: usize, _: &[u8], value: &[u8]) -> FilterDecision {
        FilterDecision::ChangeValue(value.to_ascii_uppercase())
    }
}

impl CompactionFilterFactory for UpperFactory {
    fn name(&self) -> &str {
        "upper"
    }
    fn create(&self, _: &str) -> Result<Box<dyn CompactionFilter>> {
        Ok(Box::new(Upper))
    }
}

#[test]
fn unknown_names_are_invalid_and_registration_works() {
    let reg = FilterRegistry::empty();
    assert!(matches!(
        reg.create("upper", "").err().unwrap(),
        Error::InvalidArgument(_)
    ));
    assert!(reg.create(DROP_PREFIX, "00").is_err());
    reg.register(Arc::new(UpperFactory));
    let f = reg.create("upper", "").unwrap();
    assert_eq!(
        f.filter(0, b"k", b"abc"),
        FilterDecision::ChangeValue(b"ABC".to_vec())
    );
    assert!(format!("{reg:?}").contains("upper"));
}
