//! Reading a text input one line at a time with a bound on each line, so
//! that a file of one huge line (a trace or table that is not one) is
//! refused after `max` bytes rather than read whole into memory. Shared by
//! the line-based input parsers (Mahimahi traces, series files, netem
//! distribution tables).

use std::io::{BufRead, Read};

/// What [`next_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum LineRead {
    /// A line, in the buffer without its `\n`.
    Line,
    /// A line longer than the bound (the buffer holds its start).
    TooLong,
    /// The end of the input.
    End,
}

/// Reads the next line of `input` into `buf` (cleared first), reading at
/// most `max` + 1 bytes of it.
pub fn next_line(input: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<LineRead> {
    buf.clear();
    let n = input.take(max as u64 + 1).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(LineRead::End);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > max {
        return Ok(LineRead::TooLong);
    }
    Ok(LineRead::Line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_at_their_newline_and_refused_past_the_bound() {
        let mut input: &[u8] = b"12\n1234\n123456\nlast";
        let mut buf = Vec::new();
        let mut read = || (next_line(&mut input, &mut buf, 4).unwrap(), String::from_utf8_lossy(&buf).into_owned());
        assert_eq!(read(), (LineRead::Line, "12".into()));
        // Exactly the bound, with its newline: a line.
        assert_eq!(read(), (LineRead::Line, "1234".into()));
        // One byte past the bound is read, then refused.
        assert_eq!(read(), (LineRead::TooLong, "12345".into()));
    }

    #[test]
    fn a_last_line_without_newline_is_a_line_then_the_end() {
        let mut input: &[u8] = b"a\nlast";
        let mut buf = Vec::new();
        assert_eq!(next_line(&mut input, &mut buf, 8).unwrap(), LineRead::Line);
        assert_eq!(next_line(&mut input, &mut buf, 8).unwrap(), LineRead::Line);
        assert_eq!(buf, b"last");
        assert_eq!(next_line(&mut input, &mut buf, 8).unwrap(), LineRead::End);
    }
}
