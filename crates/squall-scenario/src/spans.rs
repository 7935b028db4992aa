//! Where a key is in the scenario text: the document is parsed a second
//! time with `toml_edit`, which keeps the byte span of every key and value.

use std::ops::Range;

use toml_edit::{ArrayOfTables, Document, Item, Key, Table, Value};

use crate::error::{KeyPath, Segment};

/// Spans of the keys and values of one scenario text.
pub(crate) struct Spans {
    doc: Option<Document<String>>,
}

enum Node<'a> {
    Item(&'a Item),
    Value(&'a Value),
    Table(&'a Table),
}

impl Spans {
    pub(crate) fn new(text: &str) -> Self {
        Spans { doc: Document::parse(text.to_string()).ok() }
    }

    /// The span of the key `path` names, from its key to the end of its
    /// value. When the path leads past what the text holds (a default
    /// value, an entry inside a value), the span of the deepest part found.
    pub(crate) fn find(&self, path: &KeyPath) -> Option<Range<usize>> {
        let doc = self.doc.as_ref()?;
        let mut node = Node::Table(doc.as_table());
        let mut best: Option<Range<usize>> = None;
        for seg in &path.0 {
            let Some((next, span)) = step(&node, seg) else { break };
            if let Some(s) = span {
                best = Some(s);
            }
            node = next;
        }
        best
    }

    /// The span of the key `path` names, without its value (for errors
    /// about the key itself, like an unknown key).
    pub(crate) fn find_key(&self, path: &KeyPath) -> Option<Range<usize>> {
        let full = self.find(path)?;
        let (parent, last) = split_last(path)?;
        let Segment::Key(k) = last else { return Some(full) };
        let doc = self.doc.as_ref()?;
        let mut node = Node::Table(doc.as_table());
        for seg in &parent.0 {
            node = step(&node, seg)?.0;
        }
        let key = match node {
            Node::Item(i) => i.as_table_like().and_then(|t| t.key(k)),
            Node::Value(v) => v.as_inline_table().and_then(|t| t.key(k)),
            Node::Table(t) => t.key(k),
        };
        key.and_then(Key::span).or(Some(full))
    }
}

fn split_last(path: &KeyPath) -> Option<(KeyPath, &Segment)> {
    let (last, rest) = path.0.split_last()?;
    Some((KeyPath(rest.to_vec()), last))
}

fn join(key: Option<Range<usize>>, value: Option<Range<usize>>) -> Option<Range<usize>> {
    match (key, value) {
        (Some(k), Some(v)) if v.end > k.start && v.start >= k.start => Some(k.start..v.end),
        (Some(k), _) => Some(k),
        (None, v) => v,
    }
}

fn step<'a>(node: &Node<'a>, seg: &Segment) -> Option<(Node<'a>, Option<Range<usize>>)> {
    match (node, seg) {
        (Node::Table(t), Segment::Key(k)) => {
            let (key, item) = t.get_key_value(k)?;
            Some((Node::Item(item), join(key.span(), item.span())))
        }
        (Node::Item(i), Segment::Key(k)) => {
            let (key, item) = i.as_table_like()?.get_key_value(k)?;
            Some((Node::Item(item), join(key.span(), item.span())))
        }
        (Node::Value(v), Segment::Key(k)) => {
            let (key, item) = v.as_inline_table()?.get_key_value(k)?;
            Some((Node::Item(item), join(key.span(), item.span())))
        }
        (Node::Item(i), Segment::Index(n)) => {
            if let Some(aot) = i.as_array_of_tables() {
                let t = aot_get(aot, *n)?;
                Some((Node::Table(t), t.span()))
            } else {
                let v = i.as_array()?.get(*n)?;
                Some((Node::Value(v), v.span()))
            }
        }
        (Node::Value(v), Segment::Index(n)) => {
            let v = v.as_array()?.get(*n)?;
            Some((Node::Value(v), v.span()))
        }
        (Node::Table(_), Segment::Index(_)) => None,
    }
}

fn aot_get(aot: &ArrayOfTables, n: usize) -> Option<&Table> {
    aot.get(n)
}
