//! Log setup: JSON lines for collectors or text for people, filtered by `--log-level`. Colours only on a
//! terminal: a log written to a file or a pipe (kubectl logs, a collector) carries no escape codes.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use super::cli::LogFormat;

/// Installs the global subscriber. Invalid filters fall back to `info` with a warning.
pub fn init(format: LogFormat, level: &str) {
    let (filter, bad_filter) = match EnvFilter::try_new(level) {
        Ok(filter) => (filter, None),
        Err(error) => (EnvFilter::new("info"), Some(error.to_string())),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
        LogFormat::Text => builder.with_target(false).init(),
    }
    if let Some(error) = bad_filter {
        tracing::warn!(level, %error, "invalid --log-level, using info");
    }
}
