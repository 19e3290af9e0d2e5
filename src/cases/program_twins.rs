//! Native twins of the program suite (`cases/programs/`): each classic written the way a Rust
//! programmer would write it (structs and arrays, slices and iterators, `Box`, an enum and a
//! `match` where the script has a class hierarchy), built with the release profile.
//!
//! Unlike the micro cases' twins, these do not copy the script's memory traffic: no volatile
//! accesses, no `#[inline(never)]` helpers; LLVM may keep fields in registers, inline, unroll.
//! The only rules kept from [`super::twins`]: `n` and the result pass through [`hot_sink`] as
//! the script's pass through `sink`, and the arithmetic is the script's, operation by
//! operation (wrapping `i64`, IEEE `f64` in the same order; Rust does not contract `a * b + c`
//! to a fused multiply-add, nor does Cranelift), so the checksums are equal bit for bit.

use std::ffi::c_void;

use crate::runtime::host::hot_sink;

fn n_of(n: u64) -> i64 {
    hot_sink(n as i64)
}

// ---------------------------------------------------------------------------------------------
// n-body

const SOLAR_MASS: f64 = 39.47841760435743;
const DAYS_PER_YEAR: f64 = 365.24;

#[derive(Clone, Copy)]
struct Body {
    pos: [f64; 3],
    vel: [f64; 3],
    mass: f64,
}

impl Body {
    fn new(pos: [f64; 3], vel: [f64; 3], mass: f64) -> Body {
        Body {
            pos,
            vel: vel.map(|v| v * DAYS_PER_YEAR),
            mass: mass * SOLAR_MASS,
        }
    }
}

// The benchmark's published initial state, digit for digit as the script writes it (both round
// to the same doubles).
#[allow(clippy::excessive_precision)]
fn system() -> [Body; 5] {
    [
        Body::new([0.0; 3], [0.0; 3], 1.0),
        Body::new(
            [
                4.84143144246472090e+00,
                -1.16032004402742839e+00,
                -1.03622044471123109e-01,
            ],
            [
                1.66007664274403694e-03,
                7.69901118419740425e-03,
                -6.90460016972063023e-05,
            ],
            9.54791938424326609e-04,
        ),
        Body::new(
            [
                8.34336671824457987e+00,
                4.12479856412430479e+00,
                -4.03523417114321381e-01,
            ],
            [
                -2.76742510726862411e-03,
                4.99852801234917238e-03,
                2.30417297573763929e-05,
            ],
            2.85885980666130812e-04,
        ),
        Body::new(
            [
                1.28943695621391310e+01,
                -1.51111514016986312e+01,
                -2.23307578892655734e-01,
            ],
            [
                2.96460137564761618e-03,
                2.37847173959480950e-03,
                -2.96589568540237556e-05,
            ],
            4.36624404335156298e-05,
        ),
        Body::new(
            [
                1.53796971148509165e+01,
                -2.59193146099879641e+01,
                1.79258772950371181e-01,
            ],
            [
                2.68067772490389322e-03,
                1.62824170038242295e-03,
                -9.51592254519715870e-05,
            ],
            5.15138902046611451e-05,
        ),
    ]
}

fn offset_momentum(bodies: &mut [Body]) {
    let mut p = [0.0f64; 3];
    for b in bodies.iter() {
        for (pk, v) in p.iter_mut().zip(b.vel) {
            *pk += v * b.mass;
        }
    }
    bodies[0].vel = p.map(|pk| -pk / SOLAR_MASS);
}

fn advance(bodies: &mut [Body], dt: f64) {
    for i in 0..bodies.len() {
        let (left, right) = bodies.split_at_mut(i + 1);
        let bi = &mut left[i];
        for bj in right.iter_mut() {
            let d = [
                bi.pos[0] - bj.pos[0],
                bi.pos[1] - bj.pos[1],
                bi.pos[2] - bj.pos[2],
            ];
            let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            let mag = dt / (d2 * d2.sqrt());
            let mj = bj.mass * mag;
            for (v, dk) in bi.vel.iter_mut().zip(d) {
                *v -= dk * mj;
            }
            let mi = bi.mass * mag;
            for (v, dk) in bj.vel.iter_mut().zip(d) {
                *v += dk * mi;
            }
        }
    }
    for b in bodies.iter_mut() {
        for k in 0..3 {
            b.pos[k] += dt * b.vel[k];
        }
    }
}

fn energy(bodies: &[Body]) -> f64 {
    let mut e = 0.0;
    for (i, bi) in bodies.iter().enumerate() {
        let v = bi.vel;
        e += 0.5 * bi.mass * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        for bj in &bodies[i + 1..] {
            let d = [
                bi.pos[0] - bj.pos[0],
                bi.pos[1] - bj.pos[1],
                bi.pos[2] - bj.pos[2],
            ];
            e -= bi.mass * bj.mass / (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        }
    }
    e
}

/// n-body: `n` steps of the five bodies from the benchmark's initial state; the energy after
/// them, times 1e12. Hidden: `n`, the result.
pub(super) extern "C-unwind" fn nbody(_: *mut c_void, n: u64) -> u64 {
    let steps = n_of(n);
    let mut bodies = system();
    offset_momentum(&mut bodies);
    for _ in 0..steps {
        advance(&mut bodies, 0.01);
    }
    hot_sink((energy(&bodies) * 1e12) as i64) as u64
}

// ---------------------------------------------------------------------------------------------
// spectral-norm

const SN: usize = 32;

fn a(i: usize, j: usize) -> f64 {
    1.0 / ((i + j) * (i + j + 1) / 2 + i + 1) as f64
}

fn mul_av(v: &[f64; SN], out: &mut [f64; SN]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = v
            .iter()
            .enumerate()
            .fold(0.0, |sum, (j, x)| sum + a(i, j) * x);
    }
}

fn mul_atv(v: &[f64; SN], out: &mut [f64; SN]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = v
            .iter()
            .enumerate()
            .fold(0.0, |sum, (j, x)| sum + a(j, i) * x);
    }
}

fn mul_atav(v: &[f64; SN], out: &mut [f64; SN]) {
    let mut tmp = [0.0; SN];
    mul_av(v, &mut tmp);
    mul_atv(&tmp, out);
}

fn dot(x: &[f64; SN], y: &[f64; SN]) -> f64 {
    x.iter().zip(y).fold(0.0, |s, (a, b)| s + a * b)
}

/// spectral-norm: power iterations (4 products of 32 rows each) for `n` rows, rounded up,
/// scaling `u` and `v` by `1/|v|` after each; `sqrt(u·v / v·v)` times 1e12. Hidden: `n`, the
/// result.
pub(super) extern "C-unwind" fn spectral_norm(_: *mut c_void, n: u64) -> u64 {
    let m = n_of(n);
    let rows = 4 * SN as i64;
    let iterations = (m + rows - 1) / rows;
    let mut u = [1.0; SN];
    let mut v = [0.0; SN];
    for _ in 0..iterations {
        mul_atav(&u, &mut v);
        mul_atav(&v, &mut u);
        let norm = dot(&v, &v).sqrt();
        for (x, y) in u.iter_mut().zip(v.iter_mut()) {
            *x /= norm;
            *y /= norm;
        }
    }
    hot_sink(((dot(&u, &v) / dot(&v, &v)).sqrt() * 1e12) as i64) as u64
}

// ---------------------------------------------------------------------------------------------
// fannkuch-redux

/// fannkuch-redux over permutations of 7 in the benchmark's order, `n` of them (starting over
/// after the 5040th); `checksum * 100 + max_flips`. Hidden: `n`, the result.
pub(super) extern "C-unwind" fn fannkuch(_: *mut c_void, n: u64) -> u64 {
    const SIZE: usize = 7;
    let m = n_of(n);
    let identity: [usize; SIZE] = std::array::from_fn(|i| i);
    let mut perm1 = identity;
    let mut count = [0usize; SIZE];
    let (mut checksum, mut max_flips) = (0i64, 0i64);
    let mut index = 0i64;
    let mut r = SIZE;
    let mut done = 0;
    while done < m {
        while r != 1 {
            count[r - 1] = r;
            r -= 1;
        }
        let mut perm = perm1;
        let mut flips = 0;
        while perm[0] != 0 {
            let k = perm[0];
            perm[..=k].reverse();
            flips += 1;
        }
        max_flips = max_flips.max(flips);
        checksum += if index % 2 == 0 { flips } else { -flips };
        done += 1;
        index += 1;
        loop {
            if r == SIZE {
                perm1 = identity;
                index = 0;
                break;
            }
            perm1[..=r].rotate_left(1);
            count[r] -= 1;
            if count[r] > 0 {
                break;
            }
            r += 1;
        }
    }
    hot_sink(checksum * 100 + max_flips) as u64
}

// ---------------------------------------------------------------------------------------------
// binary-trees

struct Tree {
    children: Option<(Box<Tree>, Box<Tree>)>,
}

impl Tree {
    fn new(depth: i64) -> Box<Tree> {
        let children = (depth > 0).then(|| (Tree::new(depth - 1), Tree::new(depth - 1)));
        Box::new(Tree { children })
    }

    fn check(&self) -> i64 {
        match &self.children {
            None => 1,
            Some((l, r)) => 1 + l.check() + r.check(),
        }
    }
}

/// binary-trees: a long-lived tree of depth 4, then trees of depths 4..=8 in turn until `n`
/// nodes were made; the counts as the script sums them. Hidden: `n`, the result.
pub(super) extern "C-unwind" fn binary_trees(_: *mut c_void, n: u64) -> u64 {
    let m = n_of(n);
    let long_lived = Tree::new(4);
    let (mut nodes, mut total) = (0i64, 0i64);
    let mut k = 0;
    while nodes < m {
        let depth = 4 + k % 5;
        let c = Tree::new(depth).check();
        nodes += c;
        total += c * (depth + 1);
        k += 1;
    }
    hot_sink(total * 1000 + long_lived.check()) as u64
}

// ---------------------------------------------------------------------------------------------
// mandelbrot

/// mandelbrot: `n` pixels of the 64x64 image (starting over after the last), packed 8 to a
/// byte; a hash of the bytes. Hidden: `n`, the result.
pub(super) extern "C-unwind" fn mandelbrot(_: *mut c_void, n: u64) -> u64 {
    const SIZE: i64 = 64;
    const LIMIT: i32 = 50;
    let m = n_of(n);
    let (mut hash, mut bits) = (0i64, 0i64);
    let (mut x, mut y) = (0i64, 0i64);
    for _ in 0..m {
        let cr = 2.0 * x as f64 / SIZE as f64 - 1.5;
        let ci = 2.0 * y as f64 / SIZE as f64 - 1.0;
        let (mut zr, mut zi, mut tr, mut ti) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        let mut i = 0;
        while i < LIMIT && tr + ti <= 4.0 {
            zi = 2.0 * zr * zi + ci;
            zr = tr - ti + cr;
            tr = zr * zr;
            ti = zi * zi;
            i += 1;
        }
        bits = (bits << 1) | (tr + ti <= 4.0) as i64;
        x += 1;
        if x % 8 == 0 {
            hash = hash.wrapping_mul(31).wrapping_add(bits);
            bits = 0;
        }
        if x == SIZE {
            x = 0;
            y = (y + 1) % SIZE;
        }
    }
    hot_sink(hash.wrapping_add(bits)) as u64
}

// ---------------------------------------------------------------------------------------------
// Richards

const ID_IDLE: usize = 0;
const ID_WORKER: usize = 1;
const ID_HANDLER_A: usize = 2;
const ID_HANDLER_B: usize = 3;
const ID_DEVICE_A: usize = 4;
const ID_DEVICE_B: usize = 5;
const DATA_SIZE: usize = 4;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Device,
    Work,
}

/// Packets live in one arena; a queue is a linked list of indexes.
struct Packet {
    link: Option<usize>,
    id: usize,
    kind: Kind,
    a1: usize,
    a2: [i64; DATA_SIZE],
}

enum Task {
    Idle {
        v1: i64,
        count: i64,
    },
    Worker {
        dest: usize,
        v2: i64,
    },
    Handler {
        work: Option<usize>,
        devices: Option<usize>,
    },
    Device {
        pending: Option<usize>,
    },
}

const RUNNING: u8 = 0;
const RUNNABLE: u8 = 1;
const SUSPENDED: u8 = 2;
const SUSPENDED_RUNNABLE: u8 = SUSPENDED | RUNNABLE;
const HELD: u8 = 4;

struct Tcb {
    link: Option<usize>,
    priority: i64,
    queue: Option<usize>,
    state: u8,
    task: Task,
}

impl Tcb {
    fn held_or_suspended(&self) -> bool {
        self.state & HELD != 0 || self.state == SUSPENDED
    }
}

struct Scheduler {
    packets: Vec<Packet>,
    tcbs: [Option<Tcb>; 6],
    list: Option<usize>,
    current: Option<usize>,
    queue_count: i64,
    hold_count: i64,
}

impl Scheduler {
    fn packet(&mut self, link: Option<usize>, id: usize, kind: Kind) -> Option<usize> {
        self.packets.push(Packet {
            link,
            id,
            kind,
            a1: 0,
            a2: [0; DATA_SIZE],
        });
        Some(self.packets.len() - 1)
    }

    fn add_task(&mut self, id: usize, priority: i64, queue: Option<usize>, task: Task) {
        let state = if queue.is_some() {
            SUSPENDED_RUNNABLE
        } else {
            SUSPENDED
        };
        self.tcbs[id] = Some(Tcb {
            link: self.list,
            priority,
            queue,
            state,
            task,
        });
        self.list = Some(id);
        self.current = Some(id);
    }

    fn tcb(&mut self, id: usize) -> &mut Tcb {
        self.tcbs[id].as_mut().expect("every task id is added")
    }

    /// Append packet `p` to the queue starting at `queue`; the new head.
    fn append(&mut self, p: usize, queue: Option<usize>) -> usize {
        self.packets[p].link = None;
        let Some(head) = queue else { return p };
        let mut peek = head;
        while let Some(next) = self.packets[peek].link {
            peek = next;
        }
        self.packets[peek].link = Some(p);
        head
    }

    fn schedule(&mut self) {
        self.current = self.list;
        while let Some(id) = self.current {
            let t = self.tcb(id);
            self.current = if t.held_or_suspended() {
                t.link
            } else {
                self.run(id)
            };
        }
    }

    fn run(&mut self, id: usize) -> Option<usize> {
        let t = self.tcb(id);
        let packet = if t.state == SUSPENDED_RUNNABLE {
            t.queue
        } else {
            None
        };
        if let Some(p) = packet {
            let rest = self.packets[p].link;
            let t = self.tcb(id);
            t.queue = rest;
            t.state = if rest.is_none() { RUNNING } else { RUNNABLE };
        }
        let mut task = std::mem::replace(&mut self.tcb(id).task, Task::Device { pending: None });
        let next = match &mut task {
            Task::Idle { v1, count } => {
                *count -= 1;
                if *count <= 0 {
                    self.hold_current()
                } else if *v1 & 1 == 0 {
                    *v1 >>= 1;
                    self.release(ID_DEVICE_A)
                } else {
                    *v1 = (*v1 >> 1) ^ 0xD008;
                    self.release(ID_DEVICE_B)
                }
            }
            Task::Device { pending } => match packet {
                None => match pending.take() {
                    None => self.suspend_current(),
                    Some(v) => self.queue(v),
                },
                Some(p) => {
                    *pending = Some(p);
                    self.hold_current()
                }
            },
            Task::Worker { dest, v2 } => match packet {
                None => self.suspend_current(),
                Some(p) => {
                    *dest = if *dest == ID_HANDLER_A {
                        ID_HANDLER_B
                    } else {
                        ID_HANDLER_A
                    };
                    let pk = &mut self.packets[p];
                    pk.id = *dest;
                    pk.a1 = 0;
                    for x in pk.a2.iter_mut() {
                        *v2 += 1;
                        if *v2 > 26 {
                            *v2 = 1;
                        }
                        *x = *v2;
                    }
                    self.queue(p)
                }
            },
            Task::Handler { work, devices } => {
                if let Some(p) = packet {
                    if self.packets[p].kind == Kind::Work {
                        *work = Some(self.append(p, *work));
                    } else {
                        *devices = Some(self.append(p, *devices));
                    }
                }
                match *work {
                    Some(w) if self.packets[w].a1 < DATA_SIZE => match *devices {
                        Some(d) => {
                            *devices = self.packets[d].link;
                            let count = self.packets[w].a1;
                            self.packets[d].a1 = self.packets[w].a2[count] as usize;
                            self.packets[w].a1 = count + 1;
                            self.queue(d)
                        }
                        None => self.suspend_current(),
                    },
                    Some(w) => {
                        *work = self.packets[w].link;
                        self.queue(w)
                    }
                    None => self.suspend_current(),
                }
            }
        };
        self.tcb(id).task = task;
        next
    }

    fn current(&mut self) -> &mut Tcb {
        let id = self.current.expect("a task is running");
        self.tcb(id)
    }

    fn release(&mut self, id: usize) -> Option<usize> {
        let current = self.current().priority;
        let t = self.tcb(id);
        t.state &= !HELD;
        if t.priority > current {
            Some(id)
        } else {
            self.current
        }
    }

    fn hold_current(&mut self) -> Option<usize> {
        self.hold_count += 1;
        let t = self.current();
        t.state |= HELD;
        t.link
    }

    fn suspend_current(&mut self) -> Option<usize> {
        self.current().state |= SUSPENDED;
        self.current
    }

    fn queue(&mut self, p: usize) -> Option<usize> {
        let id = self.packets[p].id;
        self.queue_count += 1;
        self.packets[p].link = None;
        self.packets[p].id = self.current.expect("a task is running");
        let current = self.current;
        let current_priority = self.current().priority;
        let t = self.tcb(id);
        match t.queue {
            None => {
                t.queue = Some(p);
                t.state |= RUNNABLE;
                if t.priority > current_priority {
                    return Some(id);
                }
            }
            Some(q) => {
                let head = self.append(p, Some(q));
                self.tcb(id).queue = Some(head);
            }
        }
        current
    }
}

/// Richards: the idle task gets `n` ticks; `queue_count * 100000 + hold_count`. Tasks are an
/// enum matched in one `run` (a Rust programmer's class hierarchy), packets indexes into one
/// `Vec`. Hidden: `n`, the result.
pub(super) extern "C-unwind" fn richards(_: *mut c_void, n: u64) -> u64 {
    let count = n_of(n);
    let mut s = Scheduler {
        packets: Vec::with_capacity(8),
        tcbs: Default::default(),
        list: None,
        current: None,
        queue_count: 0,
        hold_count: 0,
    };
    s.add_task(ID_IDLE, 0, None, Task::Idle { v1: 1, count });
    s.tcb(ID_IDLE).state = RUNNING;

    let w = s.packet(None, ID_WORKER, Kind::Work);
    let w = s.packet(w, ID_WORKER, Kind::Work);
    let worker = Task::Worker {
        dest: ID_HANDLER_A,
        v2: 0,
    };
    s.add_task(ID_WORKER, 1000, w, worker);

    for (id, device, priority) in [
        (ID_HANDLER_A, ID_DEVICE_A, 2000),
        (ID_HANDLER_B, ID_DEVICE_B, 3000),
    ] {
        let mut q = None;
        for _ in 0..3 {
            q = s.packet(q, device, Kind::Device);
        }
        let handler = Task::Handler {
            work: None,
            devices: None,
        };
        s.add_task(id, priority, q, handler);
    }
    s.add_task(ID_DEVICE_A, 4000, None, Task::Device { pending: None });
    s.add_task(ID_DEVICE_B, 5000, None, Task::Device { pending: None });

    s.schedule();
    hot_sink(s.queue_count * 100000 + s.hold_count) as u64
}

// ---------------------------------------------------------------------------------------------
// fasta

const FASTA_ALU: &[u8] = b"GGCCGGGCGCGGTGGCTCACGCCTGTAATCCCAGCACTTTGGGAGGCCGAGGCGGGCGGATCACCTGAGGTCAGGAGTTCGAGACCAGCCTGGCCAACATGGTGAAACCCCGTCTCTACTAAAAATACAAAAATTAGCCGGGCGTGGTGGCGCGCGCCTGTAATCCCAGCTACTCGGGAGGCTGAGGCAGGAGAATCGCTTGAACCCGGGAGGCGGAGGTTGCAGTGAGCCGAGATCGCGCCACTGCACTCCAGCCTGGGCGACAGAGCGAGACTCCGTCTCAAAAA";
const FASTA_WIDTH: usize = 60;

/// The benchmark's linear congruential generator.
struct Lcg(i64);

impl Lcg {
    fn next(&mut self, max: f64) -> f64 {
        const IM: i64 = 139968;
        self.0 = (self.0 * 3877 + 29573) % IM;
        max * self.0 as f64 / IM as f64
    }
}

/// FNV-1a over each line and its newline.
struct Fnv(u64);

impl Fnv {
    fn line(&mut self, line: &[u8]) {
        const PRIME: u64 = 0x100000001b3;
        for &b in line.iter().chain(b"\n") {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(PRIME);
        }
    }
}

fn fasta_random(out: &mut Fnv, rng: &mut Lcg, codes: &[u8], probs: &[f64], n: usize) {
    let mut acc = 0.0;
    let cum: Vec<f64> = probs
        .iter()
        .map(|p| {
            acc += p;
            acc
        })
        .collect();
    let mut line = Vec::with_capacity(FASTA_WIDTH);
    let mut left = n;
    while left > 0 {
        let w = left.min(FASTA_WIDTH);
        line.clear();
        for _ in 0..w {
            let r = rng.next(1.0);
            let i = cum[..codes.len() - 1]
                .iter()
                .position(|&c| r < c)
                .unwrap_or(codes.len() - 1);
            line.push(codes[i]);
        }
        out.line(&line);
        left -= w;
    }
}

/// fasta: `2n` bases of ALU repeated, `3n` IUB and `5n` Homo sapiens random bases in lines of
/// 60; the FNV-1a hash of the text. Hidden: `n`, the result.
pub(super) extern "C-unwind" fn fasta(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n).max(0) as usize;
    let mut out = Fnv(0xcbf29ce484222325);
    let alu = FASTA_ALU;
    let (mut k, mut left) = (0, 2 * n);
    let mut line = Vec::with_capacity(FASTA_WIDTH);
    while left > 0 {
        let w = left.min(FASTA_WIDTH);
        line.clear();
        line.extend((0..w).map(|j| alu[(k + j) % alu.len()]));
        out.line(&line);
        k = (k + w) % alu.len();
        left -= w;
    }
    let mut rng = Lcg(42);
    let iub = [
        0.27, 0.12, 0.12, 0.27, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02,
    ];
    fasta_random(&mut out, &mut rng, b"acgtBDHKMNRSVWY", &iub, 3 * n);
    #[allow(clippy::excessive_precision)]
    let homo = [
        0.3029549426680,
        0.1979883004921,
        0.1975473066391,
        0.3015094502008,
    ];
    fasta_random(&mut out, &mut rng, b"acgt", &homo, 5 * n);
    hot_sink(out.0 as i64) as u64
}
