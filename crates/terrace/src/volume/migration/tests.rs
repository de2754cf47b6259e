use super::*;

fn vol(id: u32, iops: f64) -> VolumeSample {
    VolumeSample {
        id,
        iops,
        iops_limit: 500,
    }
}

fn file(number: u64, level: usize, copies: &[u32], heat: f64) -> FileSample {
    FileSample {
        number,
        level,
        copies: copies.to_vec(),
        heat,
    }
}

#[test]
fn names_parse() {
    for p in MigrationPolicy::ALL {
        assert_eq!(p.name().parse::<MigrationPolicy>(), Ok(p));
    }
    assert_eq!("IOPS-only".parse(), Ok(MigrationPolicy::IopsOnly));
    assert!("often".parse::<MigrationPolicy>().is_err());
}

#[test]
fn nothing_moves_while_no_volume_is_at_its_limit() {
    let vols = [vol(1, 440.0), vol(2, 10.0)];
    let files = [file(7, 1, &[1], 100.0)];
    for p in MigrationPolicy::ALL {
        assert!(plan(p, &vols, &files).is_empty(), "{p}");
    }
}

#[test]
fn tango_copies_each_saturated_volume_s_hottest_file_to_the_idlest_volumes() {
    let vols = [vol(1, 500.0), vol(2, 480.0), vol(3, 100.0), vol(4, 50.0)];
    let files = [
        file(10, 2, &[1], 50.0),
        file(11, 2, &[1], 90.0),
        // The hottest of all, on level 0: left alone.
        file(12, 0, &[1], 500.0),
        file(20, 1, &[2, 4], 70.0),
        file(21, 1, &[2], 10.0),
        file(30, 1, &[3], 999.0),
    ];
    let got = plan(MigrationPolicy::Tango, &vols, &files);
    assert_eq!(
        got,
        vec![
            // Volume 1 (the busiest): its hottest table file to volume 4, the idlest.
            Migration {
                number: 11,
                level: 2,
                to: 4,
                moved_from: None
            },
            // Volume 2: file 20 already has a copy on 4; volume 3 is next.
            Migration {
                number: 20,
                level: 1,
                to: 3,
                moved_from: None
            },
        ]
    );
}

#[test]
fn tango_skips_files_with_a_copy_on_every_target() {
    let vols = [vol(1, 500.0), vol(2, 0.0)];
    let files = [file(5, 1, &[1, 2], 100.0), file(6, 1, &[1], 1.0)];
    let got = plan(MigrationPolicy::Tango, &vols, &files);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].number, got[0].to), (6, 2));
}

#[test]
fn iops_only_moves_one_file_from_the_busiest_to_the_idlest() {
    let vols = [vol(1, 470.0), vol(2, 500.0), vol(3, 20.0), vol(4, 300.0)];
    let files = [
        file(1, 1, &[1], 9.0),
        file(2, 1, &[2], 3.0),
        file(3, 1, &[2], 8.0),
    ];
    let got = plan(MigrationPolicy::IopsOnly, &vols, &files);
    assert_eq!(
        got,
        vec![Migration {
            number: 3,
            level: 1,
            to: 3,
            moved_from: Some(2)
        }]
    );
}

#[test]
fn unlimited_volumes_are_neither_sources_nor_targets() {
    let vols = [
        VolumeSample {
            id: 1,
            iops: 9e9,
            iops_limit: 0,
        },
        vol(2, 500.0),
    ];
    let files = [file(1, 1, &[2], 9.0)];
    assert!(plan(MigrationPolicy::Tango, &vols, &files).is_empty());
}

#[test]
fn files_nobody_reads_are_never_copied() {
    let vols = [vol(1, 500.0), vol(2, 0.0)];
    let files = [file(5, 1, &[1], 0.0)];
    for p in MigrationPolicy::ALL {
        assert!(plan(p, &vols, &files).is_empty(), "{p}");
    }
}
