//! A Markdown table defined once: each column is its header and how its cell reads a row, side
//! by side, so a new column is one `.column(...)` line (and its field in `records`), never a
//! header, a separator and a row format kept in step by hand.
use std::fmt::Write;

type Cell<'a, R> = Box<dyn Fn(&R) -> String + 'a>;

pub struct Table<'a, R> {
    columns: Vec<(String, Cell<'a, R>)>,
}

impl<'a, R> Default for Table<'a, R> {
    fn default() -> Self {
        Self {
            columns: Vec::new(),
        }
    }
}

impl<'a, R> Table<'a, R> {
    pub fn new() -> Self {
        Self::default()
    }

    /// A column: its header, and its cell for a row.
    pub fn column(mut self, header: impl Into<String>, cell: impl Fn(&R) -> String + 'a) -> Self {
        self.columns.push((header.into(), Box::new(cell)));
        self
    }

    /// The header, the separator (left-aligned columns), then one line per row.
    pub fn render(&self, rows: impl IntoIterator<Item = R>) -> String {
        let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
        let mut o = line(self.columns.iter().map(|(h, _)| h.clone()).collect());
        let _ = writeln!(o, "|{}", "---|".repeat(self.columns.len()));
        for r in rows {
            o.push_str(&line(
                self.columns.iter().map(|(_, cell)| cell(&r)).collect(),
            ));
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_is_its_header_and_its_cell_in_one_place() {
        let t = Table::new()
            .column("n", |r: &(u32, f64)| r.0.to_string())
            .column("half", |r| format!("{:.1}", r.1 / 2.0));
        assert_eq!(
            t.render([(1, 3.0), (2, 5.0)]),
            "| n | half |\n|---|---|\n| 1 | 1.5 |\n| 2 | 2.5 |\n"
        );
    }
}
