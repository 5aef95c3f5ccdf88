//! The benchmark's results: one [`Row`] per workload and size, printed as a table, written as JSON and drawn as
//! scaling curves (SVG, with `plotters`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;
use serde::Serialize;

/// What one workload at one size measured. Per-object figures are totals divided by the object count.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    /// The workload (`nebariapp`, `nebariapp-auth`, `project`, `credential`).
    pub workload: String,
    /// How many objects were created.
    pub objects: usize,
    /// Which round of this size (from 1).
    pub round: usize,
    /// Seconds from the first create until every object reported Ready.
    pub converge_seconds: f64,
    /// Seconds from the first create until the last create was answered (the part of `converge_seconds` the
    /// objects were still arriving).
    pub created_seconds: f64,
    /// The manager's Kubernetes reads (GET) per object until convergence.
    pub gets_per_object: f64,
    /// The manager's LISTs per object until convergence.
    pub lists_per_object: f64,
    /// The manager's writes (create, update, patch, delete) per object until convergence.
    pub writes_per_object: f64,
    /// The manager's WATCH requests in total (not per object: they scale with restarts, not objects).
    pub watches: u64,
    /// The manager's Kubernetes reads and writes per object until convergence, by `verb resource[/subresource]`
    /// (watches left out): where the per-object totals come from.
    pub requests_per_object: BTreeMap<String, f64>,
    /// Reconciles per object until convergence.
    pub reconciles_per_object: f64,
    /// Requests to each external system per object until convergence (by the manager's `api` label).
    pub external_per_object: BTreeMap<String, f64>,
    /// The manager's CPU seconds spent from the first create until convergence.
    pub cpu_seconds: f64,
    /// The bench process's own CPU seconds over the same span: the API emulator, the stand-ins, the Keycloak
    /// and Rancher emulators and the creating client (the real Keystone runs apart). With the manager's, where
    /// the machine's time went.
    pub sandbox_cpu_seconds: f64,
    /// The manager's peak resident memory, MiB.
    pub peak_rss_mib: f64,
    /// Kubernetes requests the manager made during the idle phase.
    pub idle_requests: u64,
    /// Reconciles during the idle phase.
    pub idle_reconciles: u64,
    /// External requests during the idle phase.
    pub idle_external: u64,
    /// How long the idle phase lasted, seconds.
    pub idle_seconds: f64,
}

/// How one workload's cost grows with its size: per size, the medians over the rounds, against the smallest
/// size. Linear scaling keeps `time_ratio` at `object_ratio` and the CPU per object flat.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Scaling {
    /// The workload.
    pub workload: String,
    /// The object count.
    pub objects: usize,
    /// How many rounds ran at this size.
    pub rounds: usize,
    /// The median convergence time, seconds.
    pub converge_median_seconds: f64,
    /// The fastest round's convergence time, seconds.
    pub converge_min_seconds: f64,
    /// The slowest round's convergence time, seconds.
    pub converge_max_seconds: f64,
    /// This size's median convergence time over the smallest size's.
    pub time_ratio: f64,
    /// This size's object count over the smallest size's.
    pub object_ratio: f64,
    /// The manager's median CPU milliseconds per object.
    pub manager_cpu_ms_per_object: f64,
    /// The bench process's (API emulator, stand-ins) median CPU milliseconds per object.
    pub sandbox_cpu_ms_per_object: f64,
}

/// The median of `values` (the mean of the middle two for an even count); 0 for none.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Writes a Markdown table's header row and the separator row under it.
fn header(out: &mut String, columns: &[&str]) {
    let _ = writeln!(out, "| {} |", columns.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(columns.len()));
}

/// One chart: its title, the unit of its y axis, the largest y value, and how a row gives y.
type Panel = (&'static str, &'static str, f64, fn(&Row) -> f64);

/// A whole benchmark run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// The manager binary's build profile (`release` or `debug`).
    pub profile: String,
    /// Added latency per system, milliseconds.
    pub latency_ms: BTreeMap<String, u64>,
    /// Flags given to the manager beyond the controller selection (`--manager-arg`).
    pub manager_args: Vec<String>,
    /// How many times every size ran.
    pub rounds: usize,
    /// The rows, in the order run.
    pub rows: Vec<Row>,
    /// Per workload and size, the medians over the rounds against the smallest size ([`Report::summarize`]).
    pub scaling: Vec<Scaling>,
}

impl Report {
    /// The results as a Markdown table (also readable on a terminal).
    pub fn table(&self) -> String {
        let mut out = String::new();
        header(
            &mut out,
            &[
                "workload",
                "objects",
                "round",
                "converge (created)",
                "GET/obj",
                "LIST/obj",
                "writes/obj",
                "watches",
                "reconciles/obj",
                "external/obj",
                "CPU s (sandbox)",
                "peak RSS MiB",
                "idle: requests / reconciles / external",
            ],
        );
        for row in &self.rows {
            let external = if row.external_per_object.is_empty() {
                "0".to_string()
            } else {
                row.external_per_object
                    .iter()
                    .map(|(api, n)| format!("{api} {n:.1}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.1} s ({:.1} s) | {:.1} | {:.2} | {:.1} | {} | {:.2} | {} | {:.1} ({:.1}) | {:.0} | {} / {} / {} in {:.0} s |",
                row.workload,
                row.objects,
                row.round,
                row.converge_seconds,
                row.created_seconds,
                row.gets_per_object,
                row.lists_per_object,
                row.writes_per_object,
                row.watches,
                row.reconciles_per_object,
                external,
                row.cpu_seconds,
                row.sandbox_cpu_seconds,
                row.peak_rss_mib,
                row.idle_requests,
                row.idle_reconciles,
                row.idle_external,
                row.idle_seconds,
            );
        }
        out
    }

    /// Per row, the Kubernetes requests per object by verb and resource, as a Markdown list.
    pub fn breakdown(&self) -> String {
        let mut out = String::new();
        for row in &self.rows {
            let requests = row
                .requests_per_object
                .iter()
                .map(|(request, n)| format!("{request} {n:.2}"))
                .collect::<Vec<_>>()
                .join(", ");
            let _ = writeln!(
                out,
                "- {} × {}, round {}: {requests}",
                row.workload, row.objects, row.round
            );
        }
        out
    }

    /// Per workload and size, the medians over the rounds compared with the workload's smallest size.
    pub fn summarize(&self) -> Vec<Scaling> {
        let mut scaling = Vec::new();
        for (workload, rows) in self.by_workload() {
            let mut by_size: BTreeMap<usize, Vec<&Row>> = BTreeMap::new();
            for row in rows {
                by_size.entry(row.objects).or_default().push(row);
            }
            let mut smallest: Option<(usize, f64)> = None;
            for (objects, rows) in by_size {
                let converge: Vec<f64> = rows.iter().map(|r| r.converge_seconds).collect();
                let per_object_ms = |value: fn(&Row) -> f64| {
                    median(rows.iter().map(|r| 1000.0 * value(r) / objects.max(1) as f64).collect())
                };
                let converge_median = median(converge.clone());
                let (base_objects, base_converge) = *smallest.get_or_insert((objects, converge_median));
                scaling.push(Scaling {
                    workload: workload.clone(),
                    objects,
                    rounds: rows.len(),
                    converge_median_seconds: converge_median,
                    converge_min_seconds: converge.iter().copied().fold(f64::INFINITY, f64::min),
                    converge_max_seconds: converge.iter().copied().fold(0.0, f64::max),
                    time_ratio: converge_median / base_converge.max(f64::MIN_POSITIVE),
                    object_ratio: objects as f64 / base_objects.max(1) as f64,
                    manager_cpu_ms_per_object: per_object_ms(|r| r.cpu_seconds),
                    sandbox_cpu_ms_per_object: per_object_ms(|r| r.sandbox_cpu_seconds),
                });
            }
        }
        scaling
    }

    /// The scaling summary as a Markdown table.
    pub fn scaling_table(&self) -> String {
        let mut out = String::new();
        header(
            &mut out,
            &[
                "workload",
                "objects",
                "rounds",
                "converge median (min–max)",
                "time × smallest",
                "objects × smallest",
                "manager CPU ms/obj",
                "sandbox CPU ms/obj",
            ],
        );
        for s in &self.scaling {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.2} s ({:.2}–{:.2}) | {:.2} | {:.0} | {:.2} | {:.2} |",
                s.workload,
                s.objects,
                s.rounds,
                s.converge_median_seconds,
                s.converge_min_seconds,
                s.converge_max_seconds,
                s.time_ratio,
                s.object_ratio,
                s.manager_cpu_ms_per_object,
                s.sandbox_cpu_ms_per_object,
            );
        }
        out
    }

    /// Writes the report as JSON.
    pub fn write_json(&self, path: &Path) -> Result<(), String> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        let json = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(path, json).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Draws convergence time and peak memory against the object count, one line per workload through the
    /// medians of its rounds and a dot per round.
    pub fn draw(&self, path: &Path) -> Result<(), String> {
        let by_workload = self.by_workload();
        let max_objects = self.rows.iter().map(|r| r.objects).max().unwrap_or(1).max(1) as f64;
        let max_converge = self.rows.iter().map(|r| r.converge_seconds).fold(1.0, f64::max);
        let max_rss = self.rows.iter().map(|r| r.peak_rss_mib).fold(1.0, f64::max);
        let root = SVGBackend::new(path, (1200, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let panels = root.split_evenly((1, 2));
        let charts: [Panel; 2] = [
            ("Time to converge", "seconds", max_converge, |r| r.converge_seconds),
            ("Manager peak RSS", "MiB", max_rss, |r| r.peak_rss_mib),
        ];
        for (panel, (title, unit, max_y, value)) in panels.iter().zip(charts) {
            let mut chart = ChartBuilder::on(panel)
                .caption(title, ("sans-serif", 22))
                .margin(16)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..max_objects * 1.05, 0.0..max_y * 1.15)
                .map_err(|e| e.to_string())?;
            chart
                .configure_mesh()
                .x_desc("objects")
                .y_desc(unit)
                .draw()
                .map_err(|e| e.to_string())?;
            for (index, (workload, rows)) in by_workload.iter().enumerate() {
                let color = Palette99::pick(index).to_rgba();
                let points: Vec<(f64, f64)> = rows.iter().map(|r| (r.objects as f64, value(r))).collect();
                let mut per_size: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
                for row in rows {
                    per_size.entry(row.objects).or_default().push(value(row));
                }
                let medians = per_size
                    .into_iter()
                    .map(|(objects, values)| (objects as f64, median(values)));
                chart
                    .draw_series(LineSeries::new(medians, color.stroke_width(2)))
                    .map_err(|e| e.to_string())?
                    .label(workload.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
                chart
                    .draw_series(points.into_iter().map(|p| Circle::new(p, 4, color.filled())))
                    .map_err(|e| e.to_string())?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())
    }

    fn by_workload(&self) -> BTreeMap<String, Vec<&Row>> {
        let mut grouped: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
        for row in &self.rows {
            grouped.entry(row.workload.clone()).or_default().push(row);
        }
        for rows in grouped.values_mut() {
            rows.sort_by_key(|r| r.objects);
        }
        grouped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(workload: &str, objects: usize, converge: f64) -> Row {
        Row {
            workload: workload.into(),
            objects,
            round: 1,
            converge_seconds: converge,
            peak_rss_mib: 40.0,
            external_per_object: BTreeMap::from([("keycloak".to_string(), 10.0)]),
            ..Row::default()
        }
    }

    #[test]
    fn scaling_compares_each_sizes_median_with_the_smallest_size() {
        let mut report = Report {
            rows: vec![
                row("nebariapp", 1000, 2.0),
                row("nebariapp", 10000, 19.0),
                row("nebariapp", 1000, 2.4),
                row("nebariapp", 10000, 25.0),
                row("nebariapp", 1000, 1.8),
                row("nebariapp", 10000, 21.0),
                row("project", 100, 1.0),
            ],
            ..Report::default()
        };
        for (index, row) in report.rows.iter_mut().enumerate() {
            row.round = index / 2 + 1;
            row.cpu_seconds = row.objects as f64 / 1000.0 * (1.0 + index as f64 / 10.0);
        }
        let scaling = report.summarize();
        let sizes: Vec<(&str, usize, usize)> = scaling
            .iter()
            .map(|s| (s.workload.as_str(), s.objects, s.rounds))
            .collect();
        assert_eq!(
            sizes,
            [("nebariapp", 1000, 3), ("nebariapp", 10000, 3), ("project", 100, 1)]
        );
        let large = &scaling[1];
        assert_eq!(large.converge_median_seconds, 21.0);
        assert_eq!((large.converge_min_seconds, large.converge_max_seconds), (19.0, 25.0));
        assert!((large.time_ratio - 10.5).abs() < 1e-9, "{large:?}");
        assert_eq!(large.object_ratio, 10.0);
        // Rounds' CPU per object at 10k: 1.1, 1.3, 1.5 ms (indexes 1, 3, 5); the median is the middle one.
        assert!((large.manager_cpu_ms_per_object - 1.3).abs() < 1e-9, "{large:?}");
        assert_eq!((scaling[2].time_ratio, scaling[2].object_ratio), (1.0, 1.0));
        report.scaling = scaling;
        let table = report.scaling_table();
        assert!(
            table.contains("| nebariapp | 10000 | 3 | 21.00 s (19.00–25.00) | 10.50 | 10 | 1.30 |"),
            "{table}"
        );
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
    }

    #[test]
    fn the_table_has_a_line_per_row_and_the_plot_is_an_svg() {
        let report = Report {
            profile: "release".into(),
            rows: vec![row("nebariapp", 1000, 5.4), row("nebariapp", 5000, 30.0)],
            ..Report::default()
        };
        let table = report.table();
        assert_eq!(table.lines().count(), 4, "{table}");
        assert!(table.contains("| nebariapp | 5000 | 1 | 30.0 s (0.0 s) |"), "{table}");
        assert!(table.contains("keycloak 10.0"), "{table}");
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("scaling.svg");
        report.draw(&path).expect("draw");
        let svg = std::fs::read_to_string(&path).expect("svg");
        assert!(
            svg.starts_with("<svg") && svg.contains("Time to converge"),
            "{}",
            &svg[..200.min(svg.len())]
        );
    }
}
