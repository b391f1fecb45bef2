//! A tiny aligned-table formatter for human output.

use crate::terminal::escape_lines;

/// How a column's cells are aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Padded on the right.
    Left,
    /// Padded on the left (numbers).
    Right,
}

/// Rows of cells printed in aligned columns, two spaces apart.
///
/// ```
/// use emq::table::{Align, Table};
/// let mut table = Table::new([Align::Left, Align::Right]);
/// table.row(["pending", "12"]);
/// table.row(["completed", "3"]);
/// assert_eq!(table.render(), "pending    12\ncompleted   3\n");
/// ```
#[derive(Debug, Clone)]
pub struct Table {
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table whose columns are aligned as given (extra columns align left).
    pub fn new(align: impl IntoIterator<Item = Align>) -> Self {
        Self {
            align: align.into_iter().collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row. A cell's control characters other than its line
    /// breaks are shown escaped ([`escape_lines`]), so they neither reach
    /// the terminal nor upset the columns; a field of user data whose
    /// line breaks must not make the row taller is passed through
    /// [`escape`](crate::terminal::escape) first.
    pub fn row<I, S>(&mut self, cells: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(
            cells
                .into_iter()
                .map(|cell| {
                    let cell: String = cell.into();
                    escape_lines(&cell).into_owned()
                })
                .collect(),
        );
        self
    }

    /// The table as text, one line per row, with no trailing spaces. A
    /// cell holding line breaks takes as many lines as it has, the other
    /// cells of its row left blank below their first line.
    pub fn render(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(cell.lines().map(width).max().unwrap_or(0));
            }
        }
        let mut out = String::new();
        for row in &self.rows {
            let height = row
                .iter()
                .map(|cell| cell.lines().count())
                .max()
                .unwrap_or(0);
            for n in 0..height.max(1) {
                let mut line = String::new();
                for (i, cell) in row.iter().enumerate() {
                    if i > 0 {
                        line.push_str("  ");
                    }
                    let text = cell.lines().nth(n).unwrap_or("");
                    let pad = " ".repeat(widths[i] - width(text));
                    match self.align.get(i).copied().unwrap_or(Align::Left) {
                        Align::Left => {
                            line.push_str(text);
                            line.push_str(&pad);
                        }
                        Align::Right => {
                            line.push_str(&pad);
                            line.push_str(text);
                        }
                    }
                }
                out.push_str(line.trim_end());
                out.push('\n');
            }
        }
        out
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

fn width(cell: &str) -> usize {
    cell.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut table = Table::new([Align::Left, Align::Right, Align::Left]);
        table.row(["a", "1", "x"]).row(["long name", "1000", "y"]);
        assert_eq!(table.render(), "a             1  x\nlong name  1000  y\n");
    }

    #[test]
    fn ragged_rows_and_empty_table() {
        assert_eq!(Table::new([]).render(), "");
        let mut table = Table::new([Align::Left]);
        table.row(["one", "two"]).row(["three"]);
        assert_eq!(table.render(), "one    two\nthree\n");
    }

    #[test]
    fn control_characters_in_a_cell_are_escaped_before_the_columns_are_measured() {
        let mut table = Table::new([Align::Left, Align::Left]);
        table.row(["a\u{1b}[2J", "x"]).row(["bbbbbb", "y"]);
        assert_eq!(table.render(), "a\\x1b[2J  x\nbbbbbb    y\n");
    }

    #[test]
    fn a_cell_of_several_lines_makes_its_row_taller() {
        let mut table = Table::new([Align::Left, Align::Left, Align::Right]);
        table.row(["a", "x\nlonger", "1"]).row(["bb", "y", "22"]);
        assert_eq!(
            table.render(),
            "a   x        1\n    longer\nbb  y       22\n"
        );
    }
}
