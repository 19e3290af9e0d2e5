//! The doctor's report: the health report and a self-check of the engine on this machine —
//! (a) A/A: one native variant against itself must come out `equal`; (b) +1 cycle: a dependent
//! chain of 8 adds against 9 must come out `slower`, by about one cycle; (c) the calibrated core
//! clock: chains of 64 and 128 adds must agree on the time per add. Options in, a
//! [`DoctorReport`] out; `hotlab doctor` (`cli/doctor.rs`) and `:doctor` print it.

use std::sync::atomic::AtomicBool;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use super::arch::add_chain;
use super::counters::Availability;
use super::env::health::{self, HealthReport, LiveProbes};
use super::job::{Job, NoObserver, Settings, Stop};
use super::result::{Comparison, JobResult};
use super::stats::verdict::Verdict;
use super::units::Picos;
use super::variant::Variant;

/// What the doctor measures with: `hotlab doctor` and the worker's doctor job fill it in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoctorOptions {
    /// Time budget of each self-check, in seconds.
    pub time_s: f64,
    /// CPU to measure on (`None`: a quiet one).
    pub cpu: Option<usize>,
}

/// One self-check line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckLine {
    /// Short name.
    pub name: String,
    /// What is expected.
    pub expected: String,
    /// What came out, in words and numbers.
    pub got: String,
    /// Whether the expectation was met.
    pub met: bool,
    /// The verdict, for A/B checks.
    pub verdict: Option<Verdict>,
    /// Half-width of the ratio CI as a percentage of the ratio, for A/B checks.
    pub ci_half_width_pct: Option<f64>,
    /// Median difference in ns (B - A), for A/B checks.
    pub diff_ns: Option<f64>,
    /// Median difference in cycles, for A/B checks.
    pub diff_cycles: Option<f64>,
    /// A's median in ns per op, for A/B checks.
    pub a_ns: Option<f64>,
    /// Collected rounds and dropped samples.
    pub rounds: Option<usize>,
    /// Samples dropped as disturbed.
    pub dropped: Option<usize>,
}

impl CheckLine {
    /// A line that is not an A/B comparison: its name, what is expected, what came out, and
    /// whether that meets it.
    fn plain(name: &str, expected: &str, got: String, met: bool) -> CheckLine {
        CheckLine {
            name: name.into(),
            expected: expected.into(),
            got,
            met,
            verdict: None,
            ci_half_width_pct: None,
            diff_ns: None,
            diff_cycles: None,
            a_ns: None,
            rounds: None,
            dropped: None,
        }
    }
}

/// Everything `doctor` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DoctorReport {
    /// The health report.
    pub health: HealthReport,
    /// CPU the checks ran on.
    pub cpu: Option<usize>,
    /// Seconds per check.
    pub time: f64,
    /// Whether disturbance counters opened (from the A/A job).
    pub disturbances: Availability,
    /// Iterations per sample of the A/A job (before jitter).
    pub iters: u64,
    /// Self-check lines.
    pub checks: Vec<CheckLine>,
    /// Whether every expectation was met.
    pub all_met: bool,
    /// How much placement alone moved a small loop: the largest of its placements' times over
    /// the smallest, minus one (`None` where it could not be measured).
    pub layout_spread: Option<f64>,
}

fn chain4(n: u64) -> u64 {
    add_chain::<4>(std::ptr::null_mut(), n)
}

fn ab_job(options: &DoctorOptions, a: Variant, b: Variant) -> anyhow::Result<JobResult> {
    let settings = Settings {
        stop: Stop::Budget(Picos(options.time_s * 1e12)),
        cpu: options.cpu,
        ..Settings::default()
    };
    let mut job = Job::new(settings).with(a).with(b);
    Ok(job.run(&AtomicBool::new(false), &mut NoObserver)?)
}

fn ab_line(name: &str, expected: Verdict, r: &JobResult, c: &Comparison) -> CheckLine {
    let v = &c.verdict;
    let hw = (v.high.0 - v.low.0) / 2.0 / v.ratio.0 * 100.0;
    let a_ns = r.variants[c.a].summary.map(|s| s.median.nanos());
    let mut got = v.explanation.clone();
    if hw.is_finite() {
        got.push_str(&format!(" (±{hw:.3}%)"));
    }
    if let Some(abs) = &c.abs {
        got.push_str(&format!("; {abs}"));
    }
    if let Some(cy) = c.diff_cycles {
        got.push_str(&format!(" = {:+.2} cycles", cy.0));
    }
    if let Some(a) = a_ns {
        got.push_str(&format!("; A {a:.3} ns/op"));
    }
    if c.unstable {
        got.push_str("; unstable (MAD above 3% of the median)");
    }
    CheckLine {
        name: name.to_string(),
        expected: expected.to_string(),
        got,
        met: v.verdict == expected,
        verdict: Some(v.verdict),
        ci_half_width_pct: hw.is_finite().then_some(hw),
        diff_ns: c.diff.map(|d| d.estimate / 1e3),
        diff_cycles: c.diff_cycles.map(|c| c.0),
        a_ns,
        rounds: Some(r.rounds),
        dropped: Some(r.variants.iter().map(|v| v.dropped).sum()),
    }
}

/// Runs the health report and the self-checks.
pub fn doctor_report(options: &DoctorOptions) -> anyhow::Result<DoctorReport> {
    let time = options.time_s;
    if !(time.is_finite() && time > 0.0 && time <= 3600.0) {
        bail!("--time must be a number of seconds in (0, 3600], got {time}");
    }
    let probes = LiveProbes::probe();
    let health = health::collect(std::path::Path::new("/"), &probes);
    let mut checks = Vec::new();

    // The same function twice: two closures would be two copies of the code at different
    // alignments, which really can differ by several percent.
    let aa = ab_job(
        options,
        Variant::native("chain4", chain4),
        Variant::native("chain4 again", chain4),
    )
    .context("running the A/A check")?;
    let cpu = aa.cpu;
    let disturbances = aa.disturbances.clone();
    let iters = aa.iters;
    checks.push(ab_line("A/A", Verdict::Equal, &aa, &aa.compare(0, 1)?));

    // SAFETY: `add_chain` has the raw variant ABI and ignores its (null) ctx.
    let (k8, k9) = unsafe {
        (
            Variant::raw("chain8", add_chain::<8>, std::ptr::null_mut()),
            Variant::raw("chain9", add_chain::<9>, std::ptr::null_mut()),
        )
    };
    let plus = ab_job(options, k8, k9).context("running the +1 cycle check")?;
    checks.push(ab_line(
        "+1 cycle",
        Verdict::Slower,
        &plus,
        &plus.compare(0, 1)?,
    ));

    #[cfg(target_arch = "x86_64")]
    let layout_spread = {
        let (line, spread) = layout_line(options).context("measuring layout sensitivity")?;
        checks.push(line);
        spread
    };
    #[cfg(not(target_arch = "x86_64"))]
    let layout_spread = None;

    #[cfg(target_arch = "x86_64")]
    checks.push(distance_line(options).context("measuring calls into far code")?);

    if let Some(c) = probes.core_clock {
        let err = c.linearity_error();
        checks.push(CheckLine::plain(
            "core clock",
            "1 add per cycle: 64- and 128-add chains, timed in pairs, agree within 5%",
            format!(
                "{} ({:.1} ps/add and {:.1} ps/add, {:.1}% apart in pairs; the clock moved \
                 {:.1}% while calibrating, {:.2}-{:.2} GHz)",
                c.ghz,
                c.per_add_64.0,
                c.per_add_128.0,
                err * 100.0,
                c.movement() * 100.0,
                c.ghz_min.0,
                c.ghz_max.0
            ),
            err <= 0.05,
        ));
    }
    let all_met = checks.iter().all(|c| c.met);
    Ok(DoctorReport {
        health,
        cpu,
        time,
        disturbances,
        iters,
        checks,
        all_met,
        layout_spread,
    })
}

/// Placements of the doctor's layout loop: four offsets within a cache line, at two places in
/// the page.
const LAYOUT_OFFSETS: [usize; 8] = [0, 16, 32, 48, 1024, 1040, 1056, 1072];

/// The same small loop at [`LAYOUT_OFFSETS`], measured interleaved: how much placement alone
/// moves it (reported; there is no expectation to meet). Also the spread, for the report.
#[cfg(target_arch = "x86_64")]
fn layout_line(options: &DoctorOptions) -> anyhow::Result<(CheckLine, Option<f64>)> {
    use super::placed::{FRONT_END_LOOP, PlacedCode};
    let placed = LAYOUT_OFFSETS
        .iter()
        .map(|&o| {
            // SAFETY: FRONT_END_LOOP is position-independent x86-64 code with the raw ABI.
            unsafe { PlacedCode::new(FRONT_END_LOOP, o) }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let settings = Settings {
        stop: Stop::Budget(Picos(options.time_s * 1e12)),
        cpu: options.cpu,
        instructions: false,
        ..Settings::default()
    };
    let mut job = Job::new(settings);
    for (p, o) in placed.iter().zip(LAYOUT_OFFSETS) {
        // SAFETY: the code ignores its (null) ctx; the job is dropped before `placed`.
        job = job
            .with(unsafe { Variant::raw(format!("loop @+{o}"), p.entry(), std::ptr::null_mut()) });
    }
    let r = job.run(&AtomicBool::new(false), &mut NoObserver)?;
    drop(job);
    let ratios: Vec<f64> = (1..LAYOUT_OFFSETS.len())
        .filter_map(|k| r.compare(0, k).ok())
        .map(|c| c.verdict.ratio.0)
        .filter(|x| x.is_finite())
        .collect();
    let all: Vec<f64> = std::iter::once(1.0).chain(ratios.iter().copied()).collect();
    let (lo, hi) = all
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    let spread = (ratios.len() + 1 == LAYOUT_OFFSETS.len()).then_some(hi / lo - 1.0);
    let got = match spread {
        Some(s) => format!(
            "a 41-byte loop at {} placements runs at {lo:.3}x-{hi:.3}x of the first: a spread of \
             {:.1}% from placement alone (`hotlab check --layouts K` averages over placements)",
            LAYOUT_OFFSETS.len(),
            s * 100.0
        ),
        None => "too few rounds to compare the placements: run longer (--time)".to_string(),
    };
    let line = CheckLine {
        a_ns: r.variants[0].summary.map(|s| s.median.nanos()),
        rounds: Some(r.rounds),
        dropped: Some(r.variants.iter().map(|v| v.dropped).sum()),
        ..CheckLine::plain(
            "layout",
            "reported: how much where code falls moves a small loop's time",
            got,
            true,
        )
    };
    Ok((line, spread))
}

/// `n` calls of the function `ctx` points to (a frame and `mov eax, 1`), from this executable's
/// text: the doctor's probe of what the distance between caller and callee costs. One copy per
/// `SITE`: on Zen 4 a call site that has once called far code stays slow for near targets too,
/// so the near and far variants must not share one.
#[cfg(target_arch = "x86_64")]
unsafe extern "C-unwind" fn call_loop<const SITE: u8>(ctx: *mut std::ffi::c_void, n: u64) -> u64 {
    let mut sum = 0u64;
    for _ in 0..n {
        let r: u64;
        // SAFETY: `ctx` is the leaf placed by `distance_line`, which touches only rax; the
        // asm may push (no `nostack`), so the compiler keeps the stack ready for a call.
        unsafe {
            core::arch::asm!(
                "call {f}",
                "# site {s}: a comment that keeps the two copies from being merged",
                f = in(reg) ctx,
                s = const SITE,
                out("rax") r,
                clobber_abi("C"),
            );
        }
        sum = sum.wrapping_add(r);
    }
    sum
}

/// The same call from the host's text into a small function placed where hotlab puts JIT
/// code (within 2 GiB of the text) and where a plain `mmap` puts it (near the top of the
/// address space), interleaved: what the CPU's branch prediction charges for the distance,
/// and why hotlab's code memory is near (`measure/near.rs`). Reported, no expectation; a line
/// saying why not when the two cannot be placed (no near reservation, or `mmap` put the far
/// copy near).
#[cfg(target_arch = "x86_64")]
fn distance_line(options: &DoctorOptions) -> anyhow::Result<CheckLine> {
    use super::near;
    use super::placed::PlacedCode;
    // push rbp; mov rbp, rsp; mov eax, 1; pop rbp; ret: the shape of a JIT'd method (a
    // bare `mov; ret` is slow near and far alike on Zen 4, which hides the difference).
    const LEAF: &[u8] = &[
        0x55, 0x48, 0x89, 0xe5, 0xb8, 0x01, 0x00, 0x00, 0x00, 0x5d, 0xc3,
    ];
    let expected = "reported: a call from the host into code near it (where hotlab puts JIT \
                    code) and into code far from it (where mmap puts it)";
    let unmeasured = |why: String| {
        CheckLine::plain(
            "code distance",
            expected,
            format!("not measured: {why}"),
            true,
        )
    };
    let near_leaf = match near::place(LEAF) {
        Ok(Some(leaf)) => leaf,
        Ok(None) => {
            return Ok(unmeasured(
                "no room reserved near hotlab's text (JIT code goes wherever mmap puts it)".into(),
            ));
        }
        Err(e) => return Ok(unmeasured(format!("the near copy cannot run: {e}"))),
    };
    // SAFETY: LEAF is position-independent code; it is only called, through `call_loop`.
    let far_leaf = match unsafe { PlacedCode::far(LEAF, 0) } {
        Ok(leaf) => leaf,
        Err(e) => {
            // SAFETY: nothing has called into it.
            unsafe { near_leaf.free() };
            return Ok(unmeasured(format!("the far copy cannot run: {e}")));
        }
    };
    let text = call_loop::<0> as *const () as usize;
    let far_at = far_leaf.entry() as usize;
    let near_at = near_leaf.ptr as usize;
    if far_at.abs_diff(text) < 1 << 32 {
        // SAFETY: nothing has called into it.
        unsafe { near_leaf.free() };
        return Ok(unmeasured(format!(
            "mmap put the far copy {:.2} GiB from the text",
            far_at.abs_diff(text) as f64 / f64::from(1u32 << 30)
        )));
    }
    let settings = Settings {
        stop: Stop::Budget(Picos(options.time_s * 1e12)),
        cpu: options.cpu,
        ..Settings::default()
    };
    // SAFETY: `call_loop` has the raw ABI; both ctxs are leaves that live until the job is
    // dropped below.
    let mut job = unsafe {
        Job::new(settings)
            .with(Variant::raw(
                "call near",
                call_loop::<0>,
                near_leaf.ptr.cast(),
            ))
            .with(Variant::raw(
                "call far",
                call_loop::<1>,
                far_at as *mut std::ffi::c_void,
            ))
    };
    let r = job.run(&AtomicBool::new(false), &mut NoObserver);
    drop(job);
    // SAFETY: the job that called into it is gone.
    unsafe { near_leaf.free() };
    let r = r?;
    drop(far_leaf);
    let c = r.compare(0, 1)?;
    let gib = |at: usize| at.abs_diff(text) as f64 / f64::from(1u32 << 30);
    let mut line = ab_line("code distance", c.verdict.verdict, &r, &c);
    line.expected = expected.into();
    line.got = format!(
        "far ({:.0} GiB away) vs near ({:.2} GiB away): {}",
        gib(far_at),
        gib(near_at),
        line.got
    );
    line.met = true;
    Ok(line)
}

impl DoctorReport {
    /// Aligned plain text.
    pub fn render(&self) -> String {
        let mut out = String::from("health\n");
        out.push_str(&self.health.render());
        let cpu = self
            .cpu
            .map_or("not pinned".to_string(), |c| format!("CPU {c}"));
        out.push_str(&format!(
            "\nself-check ({} s per check, {cpu})\n",
            self.time
        ));
        let dropped: usize = self.checks.iter().filter_map(|c| c.dropped).sum();
        match &self.disturbances.reason {
            None => out.push_str(&format!(
                "  disturbed samples dropped: {dropped} (context switches, migrations)\n"
            )),
            Some(r) => out.push_str(&format!("  disturbances not detected: {r}\n")),
        }
        let w = self.checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
        for c in &self.checks {
            let mark = if c.met { "ok" } else { "NOT MET" };
            out.push_str(&format!(
                "  {:<w$}  {mark:<7}  expected {}\n",
                c.name, c.expected
            ));
            out.push_str(&format!("  {:<w$}  {:<7}  got {}\n", "", "", c.got));
        }
        out.push_str(if self.all_met {
            "\nall expectations met\n"
        } else {
            "\nsome expectations not met: see the health warnings above\n"
        });
        out
    }
}
