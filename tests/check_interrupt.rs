//! Ctrl-C during a one-shot `hotlab check`: SIGINT once the progress bar shows collected rounds
//! (stderr is a pseudo-terminal, so the bar is drawn as a user sees it), then the answer on the
//! rounds so far, marked partial in the line and in `--json`, with exit code 130.

use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A pseudo-terminal, 120 columns wide: its master (read here) and its slave (the child's
/// stderr).
fn pty() -> (File, OwnedFd) {
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two descriptors through the first two pointers; the name and the
    // termios may be null, the winsize points at a live value.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and nothing else owns them.
    unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

/// The largest N of the bar's `collect: N rounds` in `text`, if it shows one.
fn collected(text: &str) -> Option<u64> {
    text.match_indices("collect: ")
        .filter_map(|(at, m)| {
            let digits: String = text[at + m.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .max()
}

/// `hotlab check cases/int_loop.hot --time 5 EXTRA`, sent SIGINT once its bar shows a
/// collected round: its output, and the rounds the bar showed by then.
fn interrupted(extra: &[&str]) -> (Output, u64) {
    let (master, slave) = pty();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hotlab"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "check",
            "cases/int_loop.hot",
            "--time",
            "5",
            "--iters",
            "500",
        ])
        .args(extra)
        .env("TERM", "xterm")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(slave));
    let child = cmd.spawn().unwrap();
    // The slave's last copy here: the master reads EOF (EIO) once the child is gone.
    drop(cmd);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut master = master;
        let mut buf = [0u8; 4096];
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    // Not a timing threshold: only a guard so that a bar that never comes fails the test
    // instead of hanging it (the check itself measures for 5 s).
    let give_up = Instant::now() + Duration::from_secs(120);
    let mut seen = String::new();
    let rounds = loop {
        if let Some(n) = collected(&seen).filter(|&n| n > 0) {
            break n;
        }
        let left = give_up.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(chunk) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            Err(_) => panic!("no collected rounds on the progress bar; stderr: {seen:?}"),
        }
    };
    // SAFETY: kill with the child's pid (still running: it measures for 5 s) and SIGINT.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
    (child.wait_with_output().unwrap(), rounds)
}

#[test]
fn ctrl_c_prints_the_partial_answer_and_exits_130() {
    let (out, rounds) = interrupted(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}");
    // One line, with the verdict and the mark: `stopped after N rounds (T of 5 s): ...`.
    let line = stdout.lines().next().unwrap_or("");
    assert!(
        line.starts_with("cases/int_loop.hot on jit vs twin int_loop: "),
        "{stdout}"
    );
    let at = line.find("stopped after ").expect(&stdout) + "stopped after ".len();
    let n: u64 = line[at..]
        .split(' ')
        .next()
        .and_then(|w| w.parse().ok())
        .expect(&stdout);
    assert!(
        n >= rounds,
        "{n} rounds in the answer, {rounds} on the bar: {stdout}"
    );
    assert!(line.contains(" of 5 s): a partial answer"), "{stdout}");
    assert!(line.contains("results equal"), "{stdout}");

    let (out, rounds) = interrupted(&["--json"]);
    assert_eq!(out.status.code(), Some(130));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "check", "{v}");
    assert_eq!(v["partial"], true, "{v}");
    assert_eq!(v["exit_code"], 130, "{v}");
    assert_eq!(v["stopped"]["time_s"], 5.0, "{v}");
    let n = v["stopped"]["rounds"].as_u64().unwrap();
    assert!(n >= rounds && v["rounds"] == n, "{v}");
    let elapsed = v["stopped"]["elapsed_s"].as_f64().unwrap();
    assert!(elapsed > 0.0, "{v}");
    assert!(
        ["equal", "slower", "faster", "unresolved"].contains(&v["verdict"].as_str().unwrap()),
        "{v}"
    );
    assert!(
        v["explanation"]
            .as_str()
            .unwrap()
            .contains("a partial answer"),
        "{v}"
    );
}
