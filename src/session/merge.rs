//! Code typed into a session: when it is complete (every bracket closed, every string ended),
//! and how it joins the snippet. A function or class typed again replaces the earlier one (for a
//! class that is a reload: see `:reload`); a module variable typed again replaces the earlier
//! one too. Everything else is appended.

use crate::lang::ast::Item;
use crate::lang::{self, SourceFile};

/// True while `text` cannot be complete yet: the lexer or the parser reached the end of the
/// input with something still open (a bracket, a block, a string). A front end shows a
/// continuation prompt and reads more.
pub fn incomplete(text: &str) -> bool {
    let source = SourceFile::new("<input>", text);
    match lang::lex(&source) {
        Err(d) => d.is_incomplete(),
        Ok(tokens) => lang::parse(&tokens)
            .err()
            .is_some_and(|d| d.is_incomplete()),
    }
}

/// [`incomplete`] for a snippet named `name`: a `.clif` snippet is incomplete while a
/// function's `{` is not closed.
pub fn incomplete_in(name: &str, text: &str) -> bool {
    if name.ends_with(".clif") {
        let open = text.matches('{').count();
        open > text.matches('}').count()
    } else {
        incomplete(text)
    }
}

/// What a top-level item declares: (kind, name).
fn declared(item: &Item) -> Option<(&'static str, &str, lang::Span)> {
    match item {
        Item::Fn(f) => Some(("fn", f.sig.name.name.as_str(), f.sig.span)),
        Item::Class(c) => Some(("class", c.name.name.as_str(), c.span)),
        Item::Global(v) => Some(("var", v.name.name.as_str(), v.span)),
        Item::Native(s) => Some(("native", s.name.name.as_str(), s.span)),
        Item::Interface(_) => None,
    }
}

fn items(text: &str) -> Option<Vec<Item>> {
    let source = SourceFile::new("<snippet>", text);
    let tokens = lang::lex(&source).ok()?;
    lang::parse(&tokens).ok().map(|m| m.items)
}

/// The result of joining new code to a snippet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The snippet's new text.
    pub text: String,
    /// Items of the old text the new code replaced: (`fn`/`class`/`var`/`native`, name).
    pub replaced: Vec<(String, String)>,
}

/// Join `new` code to the snippet `old`: items `new` declares again are taken out of `old`
/// (spans from the parser; text that does not parse is simply appended).
pub fn merge(old: &str, new: &str) -> Merged {
    let mut replaced = Vec::new();
    let mut kept = old.to_string();
    if let (Some(old_items), Some(new_items)) = (items(old), items(new)) {
        let wanted: Vec<(&str, &str)> = new_items
            .iter()
            .filter_map(declared)
            .map(|(k, n, _)| (k, n))
            .collect();
        let mut cut: Vec<(lang::Span, String, String)> = old_items
            .iter()
            .filter_map(declared)
            .filter(|(k, n, _)| wanted.contains(&(*k, *n)))
            .map(|(k, n, s)| (s, k.to_string(), n.to_string()))
            .collect();
        // From the end, so earlier spans stay valid.
        cut.sort_by_key(|(s, _, _)| std::cmp::Reverse(s.start));
        for (span, kind, name) in cut {
            let range = span.range();
            if range.end <= kept.len() && kept.is_char_boundary(range.start) {
                // Take the rest of the line too, so no blank stub is left behind.
                let end = kept[range.end..]
                    .find('\n')
                    .map_or(kept.len(), |i| range.end + i + 1);
                kept.replace_range(range.start..end, "");
                replaced.push((kind, name));
            }
        }
        replaced.reverse();
    }
    let mut text = kept.trim_end().to_string();
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(new.trim_end());
    text.push('\n');
    Merged { text, replaced }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_brackets_and_strings_are_incomplete() {
        assert!(incomplete("fn main() -> i64 {"));
        assert!(incomplete("fn f(a: i64,"));
        assert!(!incomplete("fn main() -> i64 { return 1 }"));
        assert!(!incomplete("let x = 1"));
        // A stray closing bracket is complete (and a diagnostic), not a wait for more.
        assert!(!incomplete("}"));
        assert!(incomplete_in("f.clif", "function %f() -> i64 {\nblock0:"));
        assert!(!incomplete_in(
            "f.clif",
            "function %f() -> i64 {\nblock0:\n}"
        ));
    }

    #[test]
    fn a_function_typed_again_replaces_the_old_one() {
        let old = "fn a() -> i64 { return 1 }\nfn b() -> i64 { return 2 }\n";
        let m = merge(old, "fn a() -> i64 { return 3 }");
        assert_eq!(
            m.text,
            "fn b() -> i64 { return 2 }\nfn a() -> i64 { return 3 }\n"
        );
        assert_eq!(m.replaced, vec![("fn".to_string(), "a".to_string())]);
        let m = merge(old, "fn c() -> i64 { return 4 }");
        assert!(m.replaced.is_empty());
        assert!(m.text.ends_with("fn c() -> i64 { return 4 }\n"));
    }

    #[test]
    fn a_class_typed_again_replaces_the_old_one() {
        let old = "class P {\n    var x: i64 = 1\n}\nfn main() -> i64 { return 1 }\n";
        let m = merge(old, "class P {\n    var x: i64 = 2\n}");
        assert_eq!(m.replaced, vec![("class".to_string(), "P".to_string())]);
        assert!(!m.text.contains("= 1"), "{}", m.text);
        assert!(m.text.contains("fn main"), "{}", m.text);
    }
}
