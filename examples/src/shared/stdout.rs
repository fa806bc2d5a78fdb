//! What the CLI prints on standard output. `println!` panics when the reader has gone
//! (`graphkit-research … --print-input-schema | head`); these end the program quietly
//! instead, as command-line tools do when their pipe closes.

use std::io::{ErrorKind, Write};

/// Writes `text` as it is to standard output and flushes it. A closed pipe ends the
/// program with exit code 0 (its reader has what it wanted); other write errors are
/// ignored, as a terminal that cannot show the text leaves nothing to do about it.
pub fn print_text(text: &str) {
    let mut out = std::io::stdout().lock();
    let written = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    if let Err(e) = written
        && e.kind() == ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// [`print_text`] of `text` and a newline.
pub fn print_line(text: &str) {
    print_text(&format!("{text}\n"));
}
