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
    /// The rows, in the order run.
    pub rows: Vec<Row>,
}

impl Report {
    /// The results as a Markdown table (also readable on a terminal).
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "| workload | objects | converge (created) | GET/obj | LIST/obj | writes/obj | watches | reconciles/obj | external/obj | CPU s (sandbox) | peak RSS MiB | idle: requests / reconciles / external |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|");
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
                "| {} | {} | {:.1} s ({:.1} s) | {:.1} | {:.2} | {:.1} | {} | {:.2} | {} | {:.1} ({:.1}) | {:.0} | {} / {} / {} in {:.0} s |",
                row.workload,
                row.objects,
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
            let _ = writeln!(out, "- {} × {}: {requests}", row.workload, row.objects);
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

    /// Draws convergence time and peak memory against the object count, one line per workload.
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
                chart
                    .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
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
            converge_seconds: converge,
            peak_rss_mib: 40.0,
            external_per_object: BTreeMap::from([("keycloak".to_string(), 10.0)]),
            ..Row::default()
        }
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
        assert!(table.contains("| nebariapp | 5000 | 30.0 s (0.0 s) |"), "{table}");
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
