//! `--plot`: the report-interval series drawn as an SVG picture, throughput over time
//! (left axis) with p99 latency (right axis), so that write stalls show as dips and spikes;
//! with `--volumes`, a second picture beside it (`.volumes.svg`) of each volume's IOPS
//! over time, as iostat would show the devices.
//!
//! Owns: the picture's layout. Must not touch: the measurements (it only reads rows).
//! Concurrency: runs once, after the benchmarks.

use std::path::Path;

use plotters::prelude::*;

use crate::error::{BenchError, Result};
use crate::interval::IntervalRow;

/// Draws `rows` into the SVG file `path`.
///
/// # Errors
/// `Plot` if drawing or writing the file fails.
pub fn draw(path: &Path, title: &str, rows: &[IntervalRow]) -> Result<()> {
    draw_inner(path, title, rows).map_err(|reason| BenchError::Plot {
        path: path.to_path_buf(),
        reason,
    })
}

fn draw_inner(path: &Path, title: &str, rows: &[IntervalRow]) -> std::result::Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let root = SVGBackend::new(path, (1000, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let max_t = rows.iter().map(|r| r.secs_elapsed).fold(1.0, f64::max);
    let max_qps = rows.iter().map(|r| r.interval_qps).fold(1.0, f64::max) * 1.1;
    let max_p99 = rows.iter().map(|r| r.p99_micros).fold(1.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .right_y_label_area_size(70)
        .build_cartesian_2d(0.0..max_t, 0.0..max_qps)
        .map_err(|x| e(&x))?
        .set_secondary_coord(0.0..max_t, 0.0..max_p99);
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("ops/sec")
        .draw()
        .map_err(|x| e(&x))?;
    chart
        .configure_secondary_axes()
        .y_desc("p99 latency (micros)")
        .draw()
        .map_err(|x| e(&x))?;
    chart
        .draw_series(LineSeries::new(
            rows.iter().map(|r| (r.secs_elapsed, r.interval_qps)),
            &BLUE,
        ))
        .map_err(|x| e(&x))?
        .label("ops/sec")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    chart
        .draw_secondary_series(LineSeries::new(
            rows.iter().map(|r| (r.secs_elapsed, r.p99_micros)),
            &RED,
        ))
        .map_err(|x| e(&x))?
        .label("p99 micros")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}

/// The per-volume picture's file beside the plot file `path`.
pub fn volumes_path(path: &Path) -> std::path::PathBuf {
    path.with_extension("volumes.svg")
}

/// Draws each volume's IOPS over the intervals of `rows` into the SVG file `path`.
///
/// # Errors
/// `Plot` if drawing or writing the file fails.
pub fn draw_volumes(path: &Path, title: &str, rows: &[IntervalRow]) -> Result<()> {
    draw_volumes_inner(path, title, rows).map_err(|reason| BenchError::Plot {
        path: path.to_path_buf(),
        reason,
    })
}

fn draw_volumes_inner(
    path: &Path,
    title: &str,
    rows: &[IntervalRow],
) -> std::result::Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let mut ids: Vec<u32> = rows
        .iter()
        .flat_map(|r| r.volumes.iter().map(|v| v.id))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let root = SVGBackend::new(path, (1000, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let max_t = rows.iter().map(|r| r.secs_elapsed).fold(1.0, f64::max);
    let max_iops = rows
        .iter()
        .flat_map(|r| r.volumes.iter().map(|v| v.iops))
        .fold(1.0, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..max_t, 0.0..max_iops)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("IOPS per volume")
        .draw()
        .map_err(|x| e(&x))?;
    for (i, id) in ids.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let points = rows.iter().filter_map(|r| {
            r.volumes
                .iter()
                .find(|v| v.id == *id)
                .map(|v| (r.secs_elapsed, v.iops))
        });
        chart
            .draw_series(LineSeries::new(points, color))
            .map_err(|x| e(&x))?
            .label(format!("volume {id}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}
