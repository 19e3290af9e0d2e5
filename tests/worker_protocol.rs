//! Every protocol message survives a JSON round trip, and the wire form is the documented one.

use std::time::Duration;

use hotlab::export::Table;
use hotlab::results::{
    AppliedReload, BenchResult, FailureCause, FunctionListing, FunctionSummary, JobFailed,
    JobReport, LadderResult, LiveContestant, LiveSnapshot, MeasuredComparison, MeasuredRow,
    Measurement, Quantile, ReloadResult, SourceLocation,
};
use hotlab::runtime::reload::ReloadReport;
use hotlab::worker::protocol::{
    Against, Backend, Contestant, Event, MeasureSettings, Request, Response, SnippetSource,
    WorkerJob,
};

fn round_trip<T>(v: &T) -> String
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let text = serde_json::to_string(v).expect("encodes");
    assert!(!text.contains('\n'), "one message is one line: {text}");
    let back: T = serde_json::from_str(&text).expect("decodes");
    assert_eq!(&back, v);
    text
}

fn snippet() -> SnippetSource {
    SnippetSource {
        name: "a.hot".into(),
        text: "fn main() -> i64 {\n    return 1\n}\n".into(),
    }
}

fn settings() -> MeasureSettings {
    MeasureSettings {
        time_s: 0.5,
        band: 0.02,
        cpu: Some(1),
        checks: true,
    }
}

fn jobs() -> Vec<WorkerJob> {
    vec![
        WorkerJob::Compile {
            snippet: snippet(),
            backend: Backend::Jit,
            checks: true,
        },
        WorkerJob::Run {
            snippet: snippet(),
            backend: Backend::Interp,
            checks: false,
            function: "main".into(),
        },
        WorkerJob::Asm {
            snippet: snippet(),
            backend: Backend::JitOpt,
            function: Some("main".into()),
        },
        WorkerJob::Measure {
            contestants: vec![Contestant {
                label: "a".into(),
                snippet: snippet(),
                backend: Backend::Jit,
                function: "run".into(),
            }],
            settings: settings(),
        },
        WorkerJob::Doctor(hotlab::measure::doctor::DoctorOptions {
            time_s: 0.2,
            cpu: None,
        }),
        WorkerJob::Ladder {
            ladder: hotlab::ladder::resolve("host_call").expect("shipped ladder"),
            snippet: Some(snippet()),
            settings: settings(),
        },
        WorkerJob::Check {
            snippet: snippet(),
            against: Against::Twin {
                name: "int_loop".into(),
            },
            backend: Backend::JitOpt,
            settings: settings(),
            iters: 100,
            layouts: 2,
        },
        WorkerJob::Check {
            snippet: snippet(),
            against: Against::Snippet { snippet: snippet() },
            backend: Backend::Jit,
            settings: settings(),
            iters: 100,
            layouts: 2,
        },
        WorkerJob::Bench {
            filter: Some("int".into()),
            time_s: 0.1,
            reps: 1,
            cases: Some("my-cases".into()),
        },
        WorkerJob::Reload {
            snippet: snippet(),
            checks: true,
        },
        WorkerJob::RunLive {
            snippet: "a.hot".into(),
            function: "main".into(),
        },
        WorkerJob::Panic {
            message: "x".into(),
        },
    ]
}

fn measured() -> Measurement {
    Measurement {
        rows: vec![MeasuredRow {
            name: "a".into(),
            samples: 10,
            dropped: 1,
            median_ns: Some(1.25),
            mad_ns: Some(0.01),
            min_ns: Some(1.2),
            max_ns: Some(1.5),
            cycles_est: None,
            outliers: 2,
            unstable: false,
            checksum: Some((1000, 42)),
            percentiles: vec![Quantile { q: 0.5, ns: 1.25 }],
            histogram: vec!["1.20 ##### 50%".into()],
            buckets: vec![],
            counters: Some(serde_json::json!({"cycles": 3.5})),
        }],
        comparisons: vec![MeasuredComparison {
            a: "a".into(),
            b: "b".into(),
            verdict: "unresolved".into(),
            ratio: None,
            low: Some(0.9),
            high: Some(1.1),
            band: 0.02,
            explanation: "run longer".into(),
            diff_ns: Some((0.1, -0.2, 0.3)),
        }],
        iters: 1000,
        rounds: 10,
        stopped: "budget".into(),
        elapsed_s: 0.5,
        cpu: Some(1),
        pin_note: None,
        timer: "tsc".into(),
        no_counters: Some("virtual machine without PMU".into()),
    }
}

#[test]
fn every_request_round_trips() {
    for job in jobs() {
        round_trip(&Request::Job { id: 7, job });
    }
    round_trip(&Request::Cancel { id: 7 });
    round_trip(&Request::Shutdown);
}

#[test]
fn every_response_round_trips() {
    let outputs = vec![
        JobReport::Compiled {
            functions: vec![FunctionSummary {
                name: "main".into(),
                bytes: 12,
                instructions: 4,
                lower_us: 1.5,
                compile_us: 30.0,
            }],
        },
        JobReport::Ran {
            value: "45".into(),
            micros: 3.0,
        },
        JobReport::Asm {
            listings: vec![FunctionListing {
                name: "main".into(),
                clif: "function %main".into(),
                asm: "ret".into(),
                bytes: 1,
                instructions: 1,
            }],
        },
        JobReport::Measured(measured()),
        JobReport::Doctor {
            text: "ok".into(),
            all_met: true,
        },
        JobReport::Ladder(LadderResult {
            ladder: "host_call".into(),
            method: "a.hot".into(),
            note: None,
            header: vec!["machine: x".into()],
            table: {
                let mut t = Table::new("ladder host_call", &["step", ">total ns"]);
                t.push(vec!["native".into(), "1.00".into()]);
                t.notes.push("a note".into());
                t
            },
            all_ok: true,
            report: serde_json::json!({"ladder": "host_call", "rows": []}),
        }),
        JobReport::Checked(Box::new(hotlab::cases::check::CheckAnswer {
            file: "a.hot".into(),
            against: "twin int_loop".into(),
            backend: "jit".into(),
            verdict: hotlab::measure::Verdict::Unresolved,
            ratio: 1.01,
            low: 0.97,
            high: 1.05,
            band: 0.02,
            ns: Some(1.3),
            other_ns: None,
            cycles: Some(hotlab::cases::check::CyclesCi {
                median: 3.9,
                low: 3.8,
                high: 4.0,
            }),
            other_cycles: None,
            instructions: Some(12.0),
            other_instructions: None,
            n: 10_000,
            result: 7,
            other_result: 7,
            results_equal: true,
            explanation: "run longer".into(),
            exit_code: 4,
            round_ratios: vec![1.0, 1.02],
            layouts: 2,
            other_layouts: 2,
            other_unplaced: None,
            layout_spread: Some(0.01),
            layout_ratios: vec![1.0, 1.01],
            layout_ns: vec![1.3, 1.31],
            other_layout_ns: vec![1.29, 1.3],
            stopped: Some(hotlab::cases::check::Stopped {
                rounds: 2,
                elapsed_s: 0.4,
                time_s: 5.0,
            }),
        })),
        JobReport::Bench(BenchResult {
            text: "table".into(),
            markdown: "| a |".into(),
            csv: "a".into(),
            json: serde_json::json!({"tables": []}),
            problems: 1,
            errors: vec!["spin hot (jit): error: division by zero at spin.hot:3:9".into()],
            failed: true,
            mismatched: false,
        }),
        JobReport::Reloaded(ReloadResult {
            started: false,
            main: None,
            classes: vec![ReloadReport {
                class: "P".into(),
                version: 2,
                migrated: 3,
                kept: vec!["x".into()],
                added: vec![],
                removed: vec!["y".into()],
                retyped: vec![],
                reset: vec!["f".into()],
                unloaded: false,
                waited: Duration::ZERO,
                total: Duration::ZERO,
            }],
            defined: vec!["Q".into()],
            globals_kept: vec!["p".into()],
            after_reload: Some("5".into()),
        }),
    ];
    let mut events = vec![
        Event::Started { cpu: Some(1) },
        Event::Progress(LiveSnapshot {
            phase: "collect".into(),
            rounds: 3,
            elapsed_ms: 120.0,
            budget_ms: Some(1000.0),
            iters: 5000,
            variants: vec![LiveContestant {
                name: "a".into(),
                samples: 3,
                dropped: 0,
                median_ns: Some(1.3),
                histogram: vec![],
                buckets: vec![],
                percentiles: vec![],
            }],
        }),
    ];
    events.extend(outputs.into_iter().map(Event::Done));
    for kind in [
        FailureCause::Input,
        FailureCause::Script,
        FailureCause::Unavailable,
        FailureCause::Panic,
    ] {
        events.push(Event::Failed(JobFailed::new(kind, "what and where")));
    }
    // A diagnostic's place, and a reload applied before a script error.
    events.push(Event::Failed(JobFailed {
        location: Some(SourceLocation {
            snippet: "a.hot".into(),
            line: 2,
            column: 5,
        }),
        applied: Some(Box::new(AppliedReload {
            snippet: "a.hot".into(),
            classes: vec![],
            defined: vec!["C".into()],
        })),
        ..JobFailed::new(FailureCause::Script, "what")
    }));
    for event in events {
        round_trip(&Response { id: 3, event });
    }
}

#[test]
fn the_wire_form_is_the_documented_one() {
    let text = round_trip(&Request::Job {
        id: 1,
        job: WorkerJob::Run {
            snippet: snippet(),
            backend: Backend::JitOpt,
            checks: true,
            function: "main".into(),
        },
    });
    assert!(
        text.starts_with(r#"{"type":"job","id":1,"job":{"kind":"run","snippet":"#),
        "{text}"
    );
    assert!(text.contains(r#""backend":"jit-opt""#), "{text}");
    assert_eq!(
        round_trip(&Request::Cancel { id: 2 }),
        r#"{"type":"cancel","id":2}"#
    );
    let done = round_trip(&Response {
        id: 1,
        event: Event::Done(JobReport::Ran {
            value: "1".into(),
            micros: 2.0,
        }),
    });
    assert_eq!(
        done,
        r#"{"id":1,"event":{"event":"done","output":"ran","value":"1","micros":2.0}}"#
    );
    assert!(serde_json::from_str::<Request>(r#"{"type":"job","id":1}"#).is_err());
    assert!(serde_json::from_str::<Request>(r#"{"type":"launch"}"#).is_err());
}

#[test]
fn a_class_change_reads_and_writes_without_the_runtime_timings() {
    // The form the session file has always held: no timings, `reset` and `unloaded` optional.
    let old = r#"{"output":"reloaded","started":false,"main":null,"classes":[{"class":"P","version":2,"migrated":3,"kept":["x"],"added":[],"removed":[],"retyped":[]}],"defined":[],"globals_kept":[],"after_reload":null}"#;
    let report: JobReport = serde_json::from_str(old).expect("decodes");
    let JobReport::Reloaded(r) = &report else {
        panic!("{report:?}")
    };
    assert_eq!(r.classes[0].waited, Duration::ZERO);
    assert!(r.classes[0].reset.is_empty() && !r.classes[0].unloaded);
    let text = round_trip(&report);
    assert!(
        !text.contains("waited") && !text.contains("total"),
        "{text}"
    );
}

/// A check stopped before its first usable round has no ratio: serde_json writes its NaNs as
/// `null`, and the client must still read the answer (it once called this line "not a
/// response" and exited 2 on a Ctrl-C in the first 0.2 s of `hotlab check`).
#[test]
fn a_check_answer_with_no_ratio_crosses_the_pipe() {
    let line = r#"{"id":1,"event":{"event":"done","output":"checked","file":"cases/int_loop.hot","against":"twin int_loop","backend":"jit","verdict":"unresolved","ratio":null,"low":null,"high":null,"band":0.02,"ns":null,"other_ns":null,"cycles":null,"other_cycles":null,"instructions":null,"other_instructions":null,"n":10000,"result":700775371729480341,"other_result":700775371729480341,"results_equal":true,"explanation":"unresolved: only 0 usable paired rounds; stopped after 0 rounds (0.2 of 5 s): a partial answer","exit_code":130,"round_ratios":[],"layouts":2,"layout_spread":null,"layout_ratios":[null,null],"stopped":{"rounds":0,"elapsed_s":0.16,"time_s":5.0}}}"#;
    let r: Response = serde_json::from_str(line).expect("a response");
    let Event::Done(JobReport::Checked(a)) = r.event else {
        panic!("{:?}", r.event)
    };
    assert!(
        a.ratio.is_nan() && a.low.is_nan() && a.high.is_nan(),
        "{a:?}"
    );
    assert!(a.layout_ratios.len() == 2 && a.layout_ratios.iter().all(|r| r.is_nan()));
    assert_eq!(a.stopped.map(|s| s.rounds), Some(0));
    // Written before twins were placed: the twin ran at its one placement.
    assert_eq!(a.other_layouts, 1);
    assert!(a.other_unplaced.is_none() && a.layout_ns.is_empty() && a.other_layout_ns.is_empty());

    // A layout with no rounds has no time either: `null`, read back as NaN.
    let line = line.replace(
        r#""layout_ratios":[null,null],"#,
        r#""layout_ratios":[null,null],"other_layouts":2,"layout_ns":[null,1.5],"other_layout_ns":[null,null],"#,
    );
    let r: Response = serde_json::from_str(&line).expect("a response");
    let Event::Done(JobReport::Checked(a)) = r.event else {
        panic!("{:?}", r.event)
    };
    assert_eq!(a.other_layouts, 2);
    assert!(a.layout_ns[0].is_nan() && a.layout_ns[1] == 1.5, "{a:?}");
    assert!(a.other_layout_ns.len() == 2 && a.other_layout_ns.iter().all(|x| x.is_nan()));
}
