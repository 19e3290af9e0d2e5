//! A terminal for end-to-end tests: one tmux server per test, keys sent, the screen read.
//! Shared by the TUI and REPL terminal tests.
#![allow(dead_code)]

use std::process::Command;
use std::time::{Duration, Instant};

/// A terminal of its own (a tmux server per test) running one command.
pub struct Tmux {
    name: String,
}

impl Tmux {
    pub fn available() -> bool {
        Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// Whether this test can run. Without tmux it is skipped, with the reason printed, on a
    /// developer's machine; under `CI=true` (where `.ci/run` installs tmux) a missing tmux
    /// fails the test instead of letting it pass without having run.
    pub fn required() -> bool {
        if Tmux::available() {
            return true;
        }
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
        assert!(
            !ci,
            "tmux is not installed, and CI=true: this test must run here (.ci/run installs tmux)"
        );
        eprintln!("skipped: tmux is not installed (apt-get install tmux runs this test)");
        false
    }

    pub fn start(tag: &str, cmd: &str, w: u16, h: u16) -> Tmux {
        let name = format!("hotlab-e2e-{tag}-{}", std::process::id());
        // A server of its own per test (`-L`): tests running at once, or anything else on the
        // default server, cannot end each other's sessions or server.
        let ok = Command::new("tmux")
            .args(["-L", &name, "-f", "/dev/null"])
            .args(["new-session", "-d", "-s", &name, "-x", &w.to_string(), "-y"])
            .arg(h.to_string())
            .arg(cmd)
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session failed");
        Tmux { name }
    }

    /// `tmux` on this test's own server.
    pub fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.name]);
        c
    }

    pub fn keys(&self, keys: &[&str]) {
        let ok = self
            .tmux()
            .args(["send-keys", "-t", &self.name])
            .args(keys)
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }

    pub fn text(&self, text: &str) {
        let ok = self
            .tmux()
            .args(["send-keys", "-t", &self.name, "-l", text])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }

    pub fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen with up to `lines` lines of scrollback above it (a REPL's output scrolls).
    pub fn scrollback(&self, lines: u32) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-J", "-t", &self.name, "-S"])
            .arg(format!("-{lines}"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Wait until the screen satisfies `ok` (a generous limit: the machine is shared).
    pub fn wait(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(120) {
                panic!("timed out waiting for {what}; the screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn alive(&self) -> bool {
        self.tmux()
            .args(["has-session", "-t", &self.name])
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}
