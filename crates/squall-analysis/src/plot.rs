//! Plots as SVG text (plotters' SVG backend): line and point series over
//! time with shaded intervals, and means with 95% confidence bars against a
//! swept parameter. The report inlines them; they are also written as files.

use plotters::prelude::*;

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Line,
    Dots,
    Crosses,
}

/// A named series of (x, y) points.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub mark: Mark,
    pub points: Vec<(f64, f64)>,
}

/// A shaded x interval with a label (a state or a blackout).
#[derive(Clone, Debug)]
pub struct Shade {
    pub from: f64,
    pub to: f64,
    pub label: String,
}

/// Means with confidence intervals at x positions.
#[derive(Clone, Debug)]
pub struct Bars {
    pub name: String,
    /// (x, mean, low, high).
    pub points: Vec<(f64, f64, f64, f64)>,
}

const WIDTH: u32 = 760;
const HEIGHT: u32 = 360;

fn color(i: usize) -> RGBColor {
    // Tableau's ten, so that up to ten curves have a colour each.
    const C: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    C[i % C.len()]
}

/// Colours of shaded intervals, one per distinct label: light and
/// distinct from each other and from the series' colours behind them.
fn shade_color(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(255, 200, 0),
        RGBColor(120, 120, 120),
        RGBColor(0, 170, 255),
        RGBColor(200, 80, 220),
        RGBColor(120, 200, 60),
        RGBColor(255, 100, 100),
        RGBColor(0, 200, 170),
        RGBColor(170, 120, 60),
    ];
    C[i % C.len()]
}

/// The distinct labels of `shades`, in order of first appearance.
pub fn shade_labels(shades: &[Shade]) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for s in shades {
        if !labels.contains(&s.label) {
            labels.push(s.label.clone());
        }
    }
    labels
}

/// A tick value with an SI prefix (BIPM SI Brochure, 9th ed., §3,
/// Table 7): 5000000 → "5M", 0.05 → "50m", 1500 → "1.5k"; the unit
/// itself is in the axis label. At most three significant digits, no
/// trailing zeros.
pub fn si(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".into();
    }
    const PREFIXES: [(f64, &str); 9] = [
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
        (1.0, ""),
        (1e-3, "m"),
        (1e-6, "µ"),
        (1e-9, "n"),
        (1e-12, "p"),
    ];
    let a = v.abs();
    let (scale, prefix) = PREFIXES.iter().copied().find(|(s, _)| a >= *s * 0.9995).unwrap_or((1e-12, "p"));
    let m = v / scale;
    let digits = if m.abs() >= 99.95 {
        0
    } else if m.abs() >= 9.995 {
        1
    } else {
        2
    };
    let mut text = format!("{m:.digits$}");
    if text.contains('.') {
        text = text.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    format!("{text}{prefix}")
}

fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        return (lo - 0.5_f64.max(lo.abs() * 0.1), hi + 0.5_f64.max(hi.abs() * 0.1));
    }
    let pad = (hi - lo) * 0.05;
    (lo - pad, hi + pad)
}

/// Most points a series is drawn with: an SVG stays tens of kilobytes
/// however long the run (the plot is 760 pixels wide).
pub const MAX_DRAWN_POINTS: usize = 1600;

/// `points` (in x order) thinned to at most [`MAX_DRAWN_POINTS`]: the
/// lowest and the highest point of each of 800 consecutive groups, in
/// their order, so peaks and dips survive.
pub fn thin(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if points.len() <= MAX_DRAWN_POINTS {
        return points.to_vec();
    }
    let groups = MAX_DRAWN_POINTS / 2;
    let size = points.len().div_ceil(groups);
    let mut out = Vec::with_capacity(MAX_DRAWN_POINTS);
    for chunk in points.chunks(size) {
        let lo = chunk.iter().enumerate().min_by(|a, b| a.1.1.total_cmp(&b.1.1)).map_or(0, |(i, _)| i);
        let hi = chunk.iter().enumerate().max_by(|a, b| a.1.1.total_cmp(&b.1.1)).map_or(0, |(i, _)| i);
        let (a, b) = (lo.min(hi), lo.max(hi));
        out.push(chunk[a]);
        if b != a {
            out.push(chunk[b]);
        }
    }
    out
}

/// A plot of series against time (or any x), with shaded intervals.
pub fn series_plot(title: &str, x_label: &str, y_label: &str, series: &[Series], shades: &[Shade]) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let _ = draw_series(&root, title, x_label, y_label, series, shades);
        let _ = root.present();
    }
    svg
}

fn draw_series<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    shades: &[Shade],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (x0, x1) = range(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).chain(shades.iter().flat_map(|s| [s.from, s.to])),
    );
    let (y0, y1) = range(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .x_label_formatter(&|v| si(*v))
        .y_label_formatter(&|v| si(*v))
        .max_light_lines(0)
        .draw()?;
    // One legend entry and one colour per distinct label (a state entered
    // seven times is one state), whatever the number of occurrences.
    let labels = shade_labels(shades);
    for (k, label) in labels.iter().enumerate() {
        let c = shade_color(k);
        let drawn = chart.draw_series(
            shades
                .iter()
                .filter(|s| &s.label == label)
                .map(|s| Rectangle::new([(s.from, y0), (s.to, y1)], c.mix(0.18).filled())),
        )?;
        drawn
            .label(label.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.mix(0.5).filled()));
    }
    for (i, s) in series.iter().enumerate() {
        let c = color(i);
        let drawn = match s.mark {
            Mark::Line => chart.draw_series(LineSeries::new(thin(&s.points), c.stroke_width(1)))?,
            Mark::Dots => chart.draw_series(thin(&s.points).into_iter().map(|p| Circle::new(p, 2, c.filled())))?,
            Mark::Crosses => {
                chart.draw_series(thin(&s.points).into_iter().map(|p| Cross::new(p, 4, c.stroke_width(2))))?
            }
        };
        drawn.label(s.name.clone()).legend(move |(x, y)| Rectangle::new([(x, y - 3), (x + 12, y + 3)], c.filled()));
    }
    if !series.is_empty() || !shades.is_empty() {
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    Ok(())
}

/// Axes of a [`bars_plot`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Axes {
    /// Log x, for parameters swept over decades (bit error rates).
    pub log_x: bool,
    /// Log y, for metrics that grow by decades (seed 003 Figures 5 and 6:
    /// download durations).
    pub log_y: bool,
}

/// Means with 95% confidence bars against a parameter. Where curves have
/// a point at x = 0 (no load, the reference of seed 003 §3), a dashed
/// line marks each distinct value there.
pub fn bars_plot(title: &str, x_label: &str, y_label: &str, bars: &[Bars], axes: Axes) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let _ = draw_bars(&root, title, x_label, y_label, bars, axes);
        let _ = root.present();
    }
    svg
}

fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    bars: &[Bars],
    axes: Axes,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let log_x = axes.log_x;
    let tx = |x: f64| if log_x { x.max(f64::MIN_POSITIVE).log10() } else { x };
    // On a log y axis, bars reaching zero or below stop at half the
    // smallest positive mean.
    let floor =
        bars.iter().flat_map(|b| b.points.iter().map(|p| p.1)).filter(|y| *y > 0.0).fold(f64::INFINITY, f64::min) / 2.0;
    let ty = |y: f64| if axes.log_y { y.max(floor).log10() } else { y };
    let (x0, x1) = range(bars.iter().flat_map(|b| b.points.iter().map(|p| tx(p.0))));
    let (y0, y1) = range(bars.iter().flat_map(|b| b.points.iter().flat_map(|p| [ty(p.2), ty(p.3), ty(p.1)])));
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    let x_desc = if log_x { format!("log10 {x_label}") } else { x_label.to_string() };
    let y_desc = if axes.log_y { format!("log10 {y_label}") } else { y_label.to_string() };
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|v| if log_x { format!("{v:.1}") } else { si(*v) })
        .y_label_formatter(&|v| if axes.log_y { format!("{v:.1}") } else { si(*v) })
        .max_light_lines(0)
        .draw()?;
    // The value at x = 0 (no load: seed 003's reference), once per
    // distinct value (within 2%) among the curves.
    let mut at_zero: Vec<f64> = bars
        .iter()
        .flat_map(|b| b.points.iter().filter(|p| p.0 == 0.0).map(|p| p.1))
        .filter(|y| y.is_finite())
        .collect();
    at_zero.sort_by(f64::total_cmp);
    let mut references: Vec<f64> = Vec::new();
    for y in at_zero {
        if references.last().is_none_or(|r| (y - r).abs() > 0.02 * r.abs()) {
            references.push(y);
        }
    }
    if !log_x {
        let grey = RGBColor(90, 90, 90);
        for reference in references {
            let y = ty(reference);
            chart
                .draw_series(DashedLineSeries::new([(x0, y), (x1, y)], 6, 4, grey.stroke_width(1)))?
                .label(format!("reference at x = 0: {}", si(reference)))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 12, y)], grey));
        }
    }
    for (i, b) in bars.iter().enumerate() {
        let c = color(i);
        let pts: Vec<(f64, f64)> = b.points.iter().map(|p| (tx(p.0), ty(p.1))).collect();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?
            .label(b.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 3), (x + 12, y + 3)], c.filled()));
        // A bar of no width (a deterministic point) is left out: it would
        // draw nothing but three lines on the mean.
        chart.draw_series(
            b.points
                .iter()
                .filter(|p| p.3 - p.2 > 1e-9 * p.1.abs().max(1e-300))
                .map(|p| ErrorBar::new_vertical(tx(p.0), ty(p.2), ty(p.1), ty(p.3), c.stroke_width(1), 8)),
        )?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_are_svg_with_their_series() {
        let s = series_plot(
            "seq",
            "time (s)",
            "packet",
            &[Series { name: "sent".into(), mark: Mark::Dots, points: vec![(0.0, 1.0), (1.0, 2.0)] }],
            &[Shade { from: 0.2, to: 0.4, label: "blackout".into() }],
        );
        assert!(s.starts_with("<svg") && s.contains("blackout") && s.contains("sent") && s.contains("<circle"));
        let b = bars_plot(
            "t",
            "BER",
            "goodput",
            &[Bars { name: "split".into(), points: vec![(1e-6, 1.0, 0.9, 1.1), (1e-4, 0.5, 0.4, 0.6)] }],
            Axes { log_x: true, log_y: false },
        );
        assert!(b.contains("split") && b.contains("log10 BER") && b.contains("<line"));
        let b = bars_plot(
            "t",
            "load",
            "duration (s)",
            &[Bars { name: "cbr".into(), points: vec![(0.0, 30.0, 29.0, 31.0), (1.0, 900.0, -5.0, 1800.0)] }],
            Axes { log_x: false, log_y: true },
        );
        assert!(b.contains("log10 duration (s)") && b.contains("reference at x = 0: 30"), "{b}");
        // A long series is drawn with at most MAX_DRAWN_POINTS points,
        // keeping its extremes.
        let long: Vec<(f64, f64)> = (0..100_000).map(|i| (i as f64, if i == 54_321 { 99.0 } else { 1.0 })).collect();
        let t = thin(&long);
        assert!(t.len() <= MAX_DRAWN_POINTS && t.contains(&(54_321.0, 99.0)));
    }

    #[test]
    fn ticks_carry_si_prefixes() {
        assert_eq!(si(5_000_000.0), "5M");
        assert_eq!(si(1_500_000.0), "1.5M");
        assert_eq!(si(9600.0), "9.6k");
        assert_eq!(si(999.9), "1k");
        assert_eq!(si(120.0), "120");
        assert_eq!(si(0.05), "50m");
        assert_eq!(si(0.0012), "1.2m");
        assert_eq!(si(-2e-6), "-2µ");
        assert_eq!(si(0.0), "0");
    }

    #[test]
    fn each_state_is_one_legend_entry_with_its_own_colour() {
        // A state entered three times and a blackout twice: two legend
        // entries, two fill colours.
        let shades: Vec<Shade> =
            [(0.0, 1.0, "state good"), (1.0, 2.0, "state bad"), (2.0, 3.0, "state good"), (3.0, 4.0, "state good")]
                .iter()
                .map(|&(from, to, label)| Shade { from, to, label: label.into() })
                .collect();
        let svg = series_plot(
            "t",
            "time (s)",
            "x",
            &[Series { name: "x".into(), mark: Mark::Line, points: vec![(0.0, 1e6), (4.0, 5e6)] }],
            &shades,
        );
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim()))
            .collect();
        assert_eq!(texts.iter().filter(|t| **t == "state good").count(), 1, "{svg}");
        assert_eq!(texts.iter().filter(|t| **t == "state bad").count(), 1);
        let fill = |c: RGBColor| format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        assert!(svg.contains(&fill(shade_color(0))) && svg.contains(&fill(shade_color(1))), "{svg}");
        // Ticks are SI: no raw 5000000.
        assert!(!svg.contains("5000000") && texts.contains(&"5M"), "{svg}");
    }
}
