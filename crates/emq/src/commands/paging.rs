//! The one paging style of the listing commands (`jobs`, `groups`):
//! `--page N` (from 1) of `--per-page M` rows, a footer `page 2 of 3 (45
//! jobs)`, and a page past the last one shown as nothing on stdout and a
//! note on stderr naming the last, exit 0: the listing was read, that page
//! of it is empty (`--json` says so with `page` and `pages`).

/// Where a page falls in a listing of `total` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Paging {
    /// The page asked for, from 1.
    pub page: u64,
    /// Rows per page.
    pub per_page: u64,
    /// Rows in the whole listing.
    pub total: u64,
}

impl Paging {
    /// Rows before the page.
    pub(crate) fn offset(page: u64, per_page: u64) -> u64 {
        page.saturating_sub(1).saturating_mul(per_page)
    }

    /// Pages in the listing: at least 1, so an empty listing has page 1.
    pub(crate) fn pages(&self) -> u64 {
        self.total.div_ceil(self.per_page).max(1)
    }

    /// For a page past the last one, what to say: `page 9 is past the
    /// last page (2) of queue mail's pending jobs (25)`. `what` names the
    /// rows.
    pub(crate) fn past_the_end(&self, what: &str) -> Option<String> {
        let pages = self.pages();
        (self.page > pages).then(|| {
            format!(
                "page {} is past the last page ({pages}) of {what} ({})",
                self.page, self.total
            )
        })
    }

    /// Says on stderr that the page is past the last one, when it is
    /// ([`Paging::past_the_end`]); `true` then: nothing is left to show.
    pub(crate) fn note_past_the_end(&self, what: &str) -> bool {
        let Some(note) = self.past_the_end(what) else {
            return false;
        };
        eprintln!("note: {}", crate::terminal::escape(&note));
        true
    }

    /// `page 2 of 3 (45 jobs)`: `one` and `many` name a row and rows.
    pub(crate) fn footer(&self, one: &str, many: &str) -> String {
        let noun = if self.total == 1 { one } else { many };
        format!(
            "page {} of {} ({} {noun})\n",
            self.page,
            self.pages(),
            self.total
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_past_the_last_names_the_last() {
        let paging = Paging {
            page: 9,
            per_page: 20,
            total: 25,
        };
        assert_eq!(
            paging.past_the_end("queue q's pending jobs").as_deref(),
            Some("page 9 is past the last page (2) of queue q's pending jobs (25)")
        );
        let last = Paging { page: 2, ..paging };
        assert_eq!(last.past_the_end("x"), None);
        assert_eq!(last.footer("job", "jobs"), "page 2 of 2 (25 jobs)\n");
        let empty = Paging {
            page: 1,
            per_page: 20,
            total: 0,
        };
        assert_eq!(empty.past_the_end("x"), None);
        assert_eq!(Paging::offset(3, 20), 40);
    }
}
