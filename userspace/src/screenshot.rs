//! A terminal screen as an SVG picture: each cell of a ratatui buffer drawn as a monospace
//! character over its background, in the cell's colours and weight. The README's picture of
//! the live view is the real drawing code's output put through this (`rxsteer generate
//! --picture`), so it cannot show a screen the tool does not draw.
use ratatui::{
    buffer::Buffer,
    style::{Color, Modifier},
};
use std::fmt::Write;

/// One cell's size in the picture, in pixels, and the font size that fills it.
const CELL_W: f64 = 8.4;
const CELL_H: f64 = 17.0;
const FONT_PX: f64 = 14.0;
/// The terminal's own colours, where a cell keeps the default.
const DEFAULT_FG: &str = "#d0d0d0";
const DEFAULT_BG: &str = "#141414";

/// The buffer as a standalone SVG document.
pub fn svg(buf: &Buffer) -> String {
    let (w, h) = (buf.area.width, buf.area.height);
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{:.0}" height="{:.0}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="{FONT_PX}">"#,
        f64::from(w) * CELL_W,
        f64::from(h) * CELL_H
    );
    let _ = writeln!(
        o,
        r#"<rect width="100%" height="100%" fill="{DEFAULT_BG}"/>"#
    );
    for y in 0..h {
        // Backgrounds: one rectangle per run of cells sharing a colour.
        let mut x = 0;
        while x < w {
            let bg = buf[(x, y)].bg;
            let start = x;
            while x < w && buf[(x, y)].bg == bg {
                x += 1;
            }
            if let Some(fill) = colour(bg) {
                let _ = writeln!(
                    o,
                    r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{CELL_H}" fill="{fill}"/>"#,
                    f64::from(start) * CELL_W,
                    f64::from(y) * CELL_H,
                    f64::from(x - start) * CELL_W
                );
            }
        }
        // Text: one element per run of cells sharing a style, blanks left to the background.
        let mut x = 0;
        while x < w {
            let cell = &buf[(x, y)];
            let style = (cell.fg, cell.modifier);
            let start = x;
            let mut text = String::new();
            while x < w && (buf[(x, y)].fg, buf[(x, y)].modifier) == style {
                text.push_str(buf[(x, y)].symbol());
                x += 1;
            }
            if text.trim().is_empty() {
                continue;
            }
            let fill = colour(style.0).unwrap_or_else(|| DEFAULT_FG.to_string());
            let weight = if style.1.contains(Modifier::BOLD) {
                r#" font-weight="bold""#
            } else {
                ""
            };
            let dim = if style.1.contains(Modifier::DIM) {
                r#" opacity="0.6""#
            } else {
                ""
            };
            let _ = writeln!(
                o,
                r#"<text x="{:.1}" y="{:.1}" fill="{fill}"{weight}{dim} xml:space="preserve" textLength="{:.1}" lengthAdjust="spacingAndGlyphs">{}</text>"#,
                f64::from(start) * CELL_W,
                f64::from(y) * CELL_H + CELL_H * 0.78,
                f64::from(x - start) * CELL_W,
                escape(&text)
            );
        }
    }
    o.push_str("</svg>\n");
    o
}

/// A cell colour as SVG's, or None for the terminal's default.
fn colour(c: Color) -> Option<String> {
    let named = |s: &str| Some(s.to_string());
    match c {
        Color::Reset => None,
        Color::Rgb(r, g, b) => Some(format!("#{r:02x}{g:02x}{b:02x}")),
        Color::Black => named("#000000"),
        Color::Red => named("#cd3131"),
        Color::Green => named("#0dbc79"),
        Color::Yellow => named("#e5e510"),
        Color::Blue => named("#2472c8"),
        Color::Magenta => named("#bc3fbc"),
        Color::Cyan => named("#11a8cd"),
        Color::Gray => named("#e5e5e5"),
        Color::DarkGray => named("#666666"),
        Color::LightRed => named("#f14c4c"),
        Color::LightGreen => named("#23d18b"),
        Color::LightYellow => named("#f5f543"),
        Color::LightBlue => named("#3b8eea"),
        Color::LightMagenta => named("#d670d6"),
        Color::LightCyan => named("#29b8db"),
        Color::White => named("#ffffff"),
        Color::Indexed(i) => Some(indexed(i)),
    }
}

/// xterm's 256-colour palette: 16 system colours, a 6x6x6 cube, 24 greys.
fn indexed(i: u8) -> String {
    const SYSTEM: [&str; 16] = [
        "#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
        "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
    ];
    match i {
        0..=15 => SYSTEM[usize::from(i)].to_string(),
        16..=231 => {
            let n = i - 16;
            let level = |v: u8| if v == 0 { 0 } else { 55 + 40 * v };
            format!(
                "#{:02x}{:02x}{:02x}",
                level(n / 36),
                level(n / 6 % 6),
                level(n % 6)
            )
        }
        _ => {
            let v = 8 + 10 * (i - 232);
            format!("#{v:02x}{v:02x}{v:02x}")
        }
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::{layout::Rect, style::Style};

    #[test]
    fn cells_keep_their_text_colours_and_weight() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 10, 2));
        buf.set_string(0, 0, "cpu0 <1>", Style::default().bold());
        buf.set_string(0, 1, "  ", Style::default().bg(Color::Rgb(200, 40, 30)));
        buf.set_string(3, 1, "hot", Style::default().fg(Color::Red));
        let svg = svg(&buf);
        assert!(svg.starts_with("<svg "), "{svg}");
        assert!(
            svg.contains(r#"font-weight="bold" xml:space="preserve""#),
            "{svg}"
        );
        assert!(svg.contains("cpu0 &lt;1&gt;"), "escaped: {svg}");
        assert!(
            svg.contains(r##"fill="#c8281e""##),
            "the heat cell's background: {svg}"
        );
        assert!(
            svg.contains(r##"fill="#cd3131""##) && svg.contains(">hot</text>"),
            "{svg}"
        );
        assert_eq!(indexed(16), "#000000");
        assert_eq!(indexed(231), "#ffffff");
        assert_eq!(indexed(232), "#080808");
    }
}
