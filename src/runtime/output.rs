//! What `print(e)` writes to: the process's standard output, or, on a thread that captures
//! (the worker's job thread, whose stdout is the protocol pipe), a buffer the job takes with
//! its result. Every backend prints through [`print_line`]: the interpreter directly, compiled
//! code through [`hot_print`].

use std::cell::RefCell;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// The most bytes one capture keeps; later lines are counted, not kept.
pub const CAPTURE_LIMIT: usize = 1 << 20;

#[derive(Default)]
struct Capture {
    text: String,
    dropped: usize,
}

impl Capture {
    fn take(&mut self) -> String {
        let mut text = std::mem::take(&mut self.text);
        if self.dropped > 0 {
            text.push_str(&format!(
                "(… {} more bytes of output not kept)\n",
                std::mem::take(&mut self.dropped)
            ));
        }
        text
    }
}

/// A thread's capture, which another thread may empty too ([`Captured::take`]): the worker's
/// request thread sends what a job printed so far when the job is cancelled, since a job that
/// never stops never returns its output with its result.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Capture>>);

impl Captured {
    /// What was printed since the last take (see [`take_captured`]).
    pub fn take(&self) -> String {
        match self.0.lock() {
            Ok(mut c) => c.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        }
    }
}

thread_local! {
    static CAPTURE: RefCell<Option<Captured>> = const { RefCell::new(None) };
}

/// Write `text` and a newline: into this thread's capture if it has one, else to stdout.
/// A failed write (a closed stdout) is ignored, as Rust's `println!` would panic on it instead.
pub fn print_line(text: &str) {
    let captured = CAPTURE.with(|c| match c.borrow().as_ref() {
        Some(shared) => {
            let mut cap = match shared.0.lock() {
                Ok(cap) => cap,
                Err(poisoned) => poisoned.into_inner(),
            };
            if cap.text.len() + text.len() < CAPTURE_LIMIT {
                cap.text.push_str(text);
                cap.text.push('\n');
            } else {
                cap.dropped += text.len() + 1;
            }
            true
        }
        None => false,
    });
    if !captured {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }
}

/// From now on this thread's prints go to a buffer (emptied): see [`take_captured`]. The
/// returned handle reaches the same buffer from any thread.
pub fn capture_on_this_thread() -> Captured {
    let shared = Captured::default();
    capture_into(&shared);
    shared
}

/// From now on this thread's prints go to `shared` (as it is: not emptied).
pub fn capture_into(shared: &Captured) {
    CAPTURE.with(|c| *c.borrow_mut() = Some(shared.clone()));
}

/// What this thread printed since capturing began or was last taken (empty when it does not
/// capture); a capture past [`CAPTURE_LIMIT`] ends with a line saying how much was dropped.
pub fn take_captured() -> String {
    CAPTURE.with(|c| c.borrow().as_ref().map(Captured::take).unwrap_or_default())
}

/// `print(s)` from compiled code: the string cell is borrowed.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_print(cell: u64) {
    // SAFETY: generated code passes a str cell it holds a count through.
    print_line(unsafe { super::values::str_text(cell) });
}

/// The output helper compiled code imports: `(symbol, address)`.
pub fn helper_symbols() -> [(&'static str, *const u8); 1] {
    [("hot_print", hot_print as *const u8)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capturing_thread_keeps_its_lines_and_bounds_them() {
        std::thread::spawn(|| {
            assert_eq!(take_captured(), "");
            let shared = capture_on_this_thread();
            print_line("a");
            print_line("b c");
            assert_eq!(take_captured(), "a\nb c\n");
            print_line("d");
            // Another thread empties the same buffer.
            let other = shared.clone();
            assert_eq!(
                std::thread::spawn(move || other.take()).join().unwrap(),
                "d\n"
            );
            assert_eq!(take_captured(), "");
            let long = "x".repeat(CAPTURE_LIMIT / 2);
            for _ in 0..3 {
                print_line(&long);
            }
            let text = take_captured();
            assert!(text.len() < CAPTURE_LIMIT + 100, "{}", text.len());
            assert!(
                text.ends_with("more bytes of output not kept)\n"),
                "{}",
                &text[text.len() - 60..]
            );
        })
        .join()
        .unwrap();
    }
}
