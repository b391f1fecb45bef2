//! Small charts drawn on the server as SVG: no script, no canvas.

use maud::{Markup, PreEscaped, html};
use std::fmt::Write;

/// A sparkline of `values` as bars (jobs per window), scaled to the
/// largest; `title` is its tooltip.
pub(crate) fn spark(values: &[u64], title: &str) -> Markup {
    const W: f64 = 120.0;
    const H: f64 = 24.0;
    let max = values.iter().copied().max().unwrap_or(0).max(1) as f64;
    let step = W / values.len().max(1) as f64;
    let mut bars = String::new();
    for (i, value) in values.iter().enumerate() {
        let h = (*value as f64 / max * H).max(if *value > 0 { 1.0 } else { 0.0 });
        let _ = write!(
            bars,
            r#"<rect class="bar" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}"/>"#,
            i as f64 * step,
            H - h,
            (step - 0.5).max(0.5),
            h
        );
    }
    html! {
        svg.chart.spark viewBox=(format!("0 0 {W} {H}")) preserveAspectRatio="none" role="img" aria-label=(title) {
            title { (title) }
            (PreEscaped(bars))
        }
    }
}

/// One line of a [`lines`] chart: its CSS class, label and points (one
/// per window, `None` where the window has no sample).
pub(crate) struct Series<'a> {
    pub(crate) class: &'a str,
    pub(crate) label: &'a str,
    pub(crate) points: Vec<Option<f64>>,
}

/// A chart of lines (`series`, one point per window), with the largest
/// value labelled on the axis in `unit` and a legend of the series.
pub(crate) fn lines(title: &str, unit: &str, series: &[Series<'_>]) -> Markup {
    const W: f64 = 600.0;
    const H: f64 = 140.0;
    const PAD: f64 = 18.0;
    let max = series
        .iter()
        .flat_map(|s| s.points.iter().flatten())
        .fold(0.0_f64, |a, b| a.max(*b))
        .max(f64::MIN_POSITIVE);
    let len = series
        .iter()
        .map(|s| s.points.len())
        .max()
        .unwrap_or(0)
        .max(2);
    let x = |i: usize| i as f64 * W / (len - 1) as f64;
    let y = |v: f64| PAD + (H - PAD) * (1.0 - v / max);
    let mut paths = String::new();
    for s in series {
        let mut d = String::new();
        let mut pen_up = true;
        for (i, point) in s.points.iter().enumerate() {
            match point {
                Some(v) => {
                    // A point with no neighbour draws no line: a dot.
                    let alone = i.checked_sub(1).is_none_or(|at| s.points[at].is_none())
                        && s.points.get(i + 1).is_none_or(Option::is_none);
                    if alone {
                        let _ = write!(
                            paths,
                            r#"<circle class="dot {}" cx="{:.1}" cy="{:.1}" r="3"/>"#,
                            s.class,
                            x(i),
                            y(*v)
                        );
                    }
                    let _ = write!(
                        d,
                        "{}{:.1},{:.1} ",
                        if pen_up { "M" } else { "L" },
                        x(i),
                        y(*v)
                    );
                    pen_up = false;
                }
                None => pen_up = true,
            }
        }
        let _ = write!(
            paths,
            r#"<path class="line {}" d="{}"/>"#,
            s.class,
            d.trim_end()
        );
    }
    html! {
        figure {
            svg.chart viewBox=(format!("0 0 {W} {H}")) role="img" aria-label=(title) {
                title { (title) }
                line.axis x1="0" y1=(H) x2=(W) y2=(H) {}
                text x="2" y="11" { (format_value(max)) " " (unit) }
                (PreEscaped(paths))
            }
            figcaption.muted {
                (title) ": "
                @for s in series { span class=(format!("legend {}", s.class)) { (s.label) } " " }
            }
        }
    }
}

fn format_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spark_has_one_bar_per_value() {
        let svg = spark(&[0, 3, 6], "jobs").into_string();
        assert_eq!(svg.matches("<rect").count(), 3);
        assert!(svg.contains(r#"height="24.0""#), "{svg}");
    }

    #[test]
    fn a_line_lifts_its_pen_over_empty_windows() {
        let svg = lines(
            "wait",
            "ms",
            &[Series {
                class: "p50",
                label: "p50",
                points: vec![Some(1.0), None, Some(2.0)],
            }],
        )
        .into_string();
        assert_eq!(svg.matches('M').count(), 2, "{svg}");
        // Both points stand alone: each is a dot too.
        assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
    }
}
