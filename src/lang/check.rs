//! The checker: the syntax tree to the checked program ([`hir::Program`]).
//!
//! Three passes over the module:
//! 1. declare every top-level name (so functions can be called before their definition) and
//!    resolve the signatures of functions and `native fn`s (the latter against the host table);
//! 2. check the module variables' initializers in declaration order (a variable's type is its
//!    annotation or its initializer's type) and synthesize `<init>` from them;
//! 3. check every function body.
//!
//! A failed sub-expression yields `None` after reporting once, and everything built on it is
//! silently skipped (no cascades of follow-on errors); at most one diagnostic is reported per
//! statement. A program is returned only if nothing was reported.

mod builtin;
mod class;
mod closure;
mod constant;
mod construct;
mod expr;
mod narrow;
mod object;
mod stmt;
mod types;

use std::collections::HashMap;
use std::sync::Arc;

use super::ast::{self, Item};
use super::diag::{DiagKind, Diagnostic, Diagnostics};
use super::hir::{
    Block, ClassId, FuncId, Function, Global, GlobalId, Local, LocalId, NativeId, NativeImport,
    Place, PlaceKind, Program, Stmt, StmtKind, Type,
};
use super::host::{host_sig, host_signatures};
use super::span::{SourceFile, Span};

/// The most cells one array type whose cells own references may hold (`[str; N]`, arrays of
/// handles, vecs or closures): such arrays stay on the compiled backends' stacks, where their
/// cells are named one by one for the unwinder. Arrays of plain scalars may be larger
/// ([`MAX_PLAIN_ARRAY_CELLS`]): above [`HEAP_SLOT_CELLS`](super::hir::HEAP_SLOT_CELLS) cells a
/// compiled function keeps them on the heap.
pub const MAX_ARRAY_CELLS: u64 = 1 << 16;

/// The most cells one array of plain scalars (`i64`, `f64`, `bool`, arrays of them) may hold:
/// 32 GiB, as many elements as a length (`u32`) counts. Whether it fits in memory is the
/// job's memory limit's to say (`--mem`), at run time.
pub const MAX_PLAIN_ARRAY_CELLS: u64 = 1 << 32;

/// The deepest module (in [`ast::Module::nesting`] levels) checked on the caller's thread: at
/// about 3.5 KiB of stack per level in a release build and several times that in a debug
/// build, this fits the smallest stack a caller has (a 2 MiB spawned thread).
pub const INLINE_NESTING: u32 = 64;

/// The stack of the thread that checks a module nesting deeper than [`INLINE_NESTING`]: room
/// for [`crate::lang::parser::MAX_EXPR_DEPTH`] levels at 16 KiB each, twice over. Only the
/// pages a check touches are ever backed by memory.
pub const CHECK_STACK: usize = 128 << 20;

/// Check a parsed module; `source` is the file it was parsed from (the program keeps it for
/// locations). A deeply nested module is checked on a thread with [`CHECK_STACK`], whatever
/// stack the caller has; the others on the caller's thread.
pub fn check(module: &ast::Module, source: Arc<SourceFile>) -> Result<Program, Diagnostics> {
    if module.nesting <= INLINE_NESTING {
        return check_here(module, source);
    }
    std::thread::scope(|scope| {
        let checker = std::thread::Builder::new()
            .name("hotlab-check".into())
            .stack_size(CHECK_STACK)
            .spawn_scoped(scope, || check_here(module, Arc::clone(&source)));
        match checker {
            Ok(checker) => checker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(e) => Err(Diagnostics(vec![Diagnostic::new(
                DiagKind::Other,
                Span::default(),
                format!(
                    "this module nests {} levels deep and its check needs a thread with a \
                     larger stack, which cannot start: {e}",
                    module.nesting
                ),
            )])),
        }
    })
}

fn check_here(module: &ast::Module, source: Arc<SourceFile>) -> Result<Program, Diagnostics> {
    let mut ck = Checker::default();
    ck.declare_class_names(module);
    ck.declare_items(module);
    ck.declare_constants(module);
    ck.declare_classes(module);
    ck.check_globals(module);
    ck.check_bodies(module);
    if !ck.diags.is_empty() {
        return Err(Diagnostics(ck.diags));
    }
    // Lambda bodies got the ids after every declared function's, in the order they were made.
    debug_assert_eq!(ck.functions.len(), ck.sigs.len());
    let lambdas = std::mem::take(&mut ck.lambdas);
    ck.functions.extend(lambdas);
    let init = FuncId(ck.functions.len() as u32);
    ck.functions.push(Function {
        name: "<init>".to_string(),
        param_count: 0,
        ret: Type::Unit,
        locals: Vec::new(),
        body: Block {
            stmts: std::mem::take(&mut ck.init_stmts),
        },
        span: Span::default(),
        name_span: Span::default(),
        class: None,
        captures: None,
    });
    let main = ck.main;
    let classes = ck.classes.iter().map(|c| c.to_hir()).collect();
    Ok(Program {
        source,
        globals: ck.globals,
        natives: ck.natives,
        functions: ck.functions,
        init,
        main,
        classes,
        nesting: module.nesting,
    })
}

/// What a top-level name stands for.
#[derive(Debug, Clone, Copy)]
enum ModName {
    Global(GlobalId),
    Func(FuncId),
    Native(NativeId),
    Class(ClassId),
}

/// A function's signature as the checker knows it (`None`: a type that failed to resolve).
#[derive(Debug, Clone)]
struct FnSigInfo {
    name: String,
    params: Vec<Option<Type>>,
    ret: Option<Type>,
    name_span: Span,
    /// For a method or static function: its class.
    class: Option<ClassId>,
}

/// A local as the checker sees it.
#[derive(Debug, Clone)]
struct LocalInfo {
    ty: Option<Type>,
    /// What it is, for "cannot assign to ..." messages.
    what: LocalWhat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LocalWhat {
    Let,
    Var,
    Param,
    LoopVar,
    /// A lambda's copy of an enclosing local.
    Capture,
}

/// The state of the function body being checked.
#[derive(Debug, Default)]
struct FnState {
    locals: Vec<Local>,
    info: Vec<LocalInfo>,
    /// Visible names, innermost last; `scope_marks` records where each open scope starts.
    names: Vec<(String, LocalId)>,
    scope_marks: Vec<usize>,
    /// The return type (`None` when it failed to resolve).
    ret: Option<Type>,
    /// Whether each enclosing loop (innermost last) has a `break` of its own.
    loops: Vec<bool>,
    /// While checking module variable initializers: globals from this index on are not yet
    /// declared.
    global_limit: Option<usize>,
    /// In a method: its class (local 0 is `self`). `None` in functions and static functions.
    /// In a lambda: the enclosing method's class (`self` is then a capture).
    self_class: Option<ClassId>,
    /// The function's name (for the names of the lambdas inside it).
    fn_name: String,
    /// In a lambda's body: what it captured so far.
    lambda: Option<closure::Captures>,
    /// Flow typing: the locals a condition narrowed here, innermost last (`narrow.rs`).
    narrowed: Vec<narrow::Fact>,
    /// Facts an assignment in their block broke, with the assignment (for diagnostics).
    broken: Vec<(LocalId, Type, Span)>,
}

impl FnState {
    /// A local visible by this name in this function (innermost first), or a capture of it.
    fn visible(&self, name: &str) -> Option<LocalId> {
        self.names
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, id)| *id)
            .or_else(|| self.lambda.as_ref()?.get(name))
    }
}

#[derive(Default)]
struct Checker {
    diags: Vec<Diagnostic>,
    /// Whether the current statement has reported already (one diagnostic per statement).
    reported: bool,
    names: HashMap<String, (ModName, Span)>,
    globals: Vec<Global>,
    global_types: Vec<Option<Type>>,
    natives: Vec<NativeImport>,
    sigs: Vec<FnSigInfo>,
    functions: Vec<Function>,
    init_stmts: Vec<Stmt>,
    main: Option<FuncId>,
    f: FnState,
    classes: Vec<class::ClassInfo>,
    /// Methods in the order of their ids (after every plain function's); `None` is the class's
    /// synthesized constructor (`C.new`, right after the class's own methods).
    methods_in_order: Vec<(ClassId, Option<ast::FnDecl>)>,
    /// While checking a lambda's body: the states of the functions around it, outermost first.
    enclosing: Vec<FnState>,
    /// Checked lambda bodies; lambda `k` gets the id `sigs.len() + k`.
    lambdas: Vec<Function>,
    /// Lambdas started so far (numbers their names).
    lambda_count: u32,
    /// Module `let` constants with constant initializers (checked before the classes: field
    /// initializers may name them).
    constants: HashMap<GlobalId, super::hir::Expr>,
}

impl Checker {
    /// Report a diagnostic unless the current statement already has one.
    fn error(&mut self, diag: Diagnostic) {
        if !self.reported {
            self.reported = true;
            self.diags.push(diag);
        }
    }

    /// Run `f` as a statement of its own (it may report once).
    fn statement<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = std::mem::replace(&mut self.reported, false);
        let r = f(self);
        self.reported = saved;
        r
    }

    fn declare(&mut self, name: &ast::Ident, what: ModName) -> bool {
        if name.name == "assert" {
            self.statement(|ck| {
                ck.error(Diagnostic::new(
                    DiagKind::Duplicate,
                    name.span,
                    "`assert` is a builtin function and cannot be declared again",
                ))
            });
            return false;
        }
        if let Some((_, first)) = self.names.get(&name.name) {
            let first = *first;
            self.statement(|ck| {
                ck.error(
                    Diagnostic::new(
                        DiagKind::Duplicate,
                        name.span,
                        format!("`{}` is declared twice in this module", name.name),
                    )
                    .with_label(first, "first declared here"),
                )
            });
            return false;
        }
        self.names.insert(name.name.clone(), (what, name.span));
        true
    }

    // ---- pass 1 ----

    fn declare_items(&mut self, module: &ast::Module) {
        for item in &module.items {
            match item {
                Item::Global(decl) => {
                    let id = GlobalId(self.globals.len() as u32);
                    self.declare(&decl.name, ModName::Global(id));
                    self.globals.push(Global {
                        name: decl.name.name.clone(),
                        ty: Type::Unit,
                        mutable: decl.mutable,
                        span: decl.span,
                    });
                    self.global_types.push(None);
                }
                Item::Fn(decl) => {
                    let id = FuncId(self.sigs.len() as u32);
                    self.declare(&decl.sig.name, ModName::Func(id));
                    let sig = self.statement(|ck| ck.fn_sig(&decl.sig, false));
                    if decl.sig.name.name == "main" && self.main.is_none() {
                        self.main = Some(id);
                        self.statement(|ck| ck.check_main(&decl.sig, &sig));
                    }
                    self.sigs.push(sig);
                }
                Item::Native(sig) => {
                    let id = NativeId(self.natives.len() as u32);
                    self.declare(&sig.name, ModName::Native(id));
                    let import = self.statement(|ck| ck.native(sig));
                    self.natives.push(import);
                }
                // Declared by `declare_class_names`, their members by `declare_classes`.
                Item::Class(_) => {}
                Item::Interface(iface) => {
                    let span = Span::new(iface.span.start as usize, iface.name.span.end as usize);
                    self.statement(|ck| {
                        ck.error(Diagnostic::new(
                            DiagKind::Unsupported,
                            span,
                            "interfaces are provided by the host; a script cannot declare one",
                        ))
                    });
                }
            }
        }
    }

    /// The types of a function's or a lambda's parameters (`None` where one did not resolve),
    /// reporting a name declared twice.
    pub(super) fn param_types(&mut self, params: &[ast::Param]) -> Vec<Option<Type>> {
        let mut seen: HashMap<&str, Span> = HashMap::new();
        let mut types = Vec::new();
        for p in params {
            if let Some(first) = seen.insert(&p.name.name, p.name.span) {
                self.error(
                    Diagnostic::new(
                        DiagKind::Duplicate,
                        p.name.span,
                        format!("parameter `{}` is declared twice", p.name.name),
                    )
                    .with_label(first, "first declared here"),
                );
            }
            types.push(self.resolve_type(&p.ty));
        }
        types
    }

    fn fn_sig(&mut self, sig: &ast::FnSig, in_class: bool) -> FnSigInfo {
        if let (Some(span), false) = (sig.self_param, in_class) {
            self.error(
                Diagnostic::new(
                    DiagKind::BadClass,
                    span,
                    "`self` outside a class: only methods take `self`",
                )
                .with_note("declare the function inside a `class`"),
            );
        }
        let params = self.param_types(&sig.params);
        let ret = match &sig.ret {
            Some(t) => self.resolve_type(t),
            None => Some(Type::Unit),
        };
        FnSigInfo {
            name: sig.name.name.clone(),
            params,
            ret,
            name_span: sig.name.span,
            class: None,
        }
    }

    fn check_main(&mut self, decl: &ast::FnSig, sig: &FnSigInfo) {
        if let Some(first) = decl.params.first() {
            let last = decl.params.last().map_or(first.ty.span, |p| p.ty.span);
            self.error(Diagnostic::new(
                DiagKind::BadMain,
                first.name.span.to(last),
                "`main` cannot take parameters",
            ));
        }
        if let (Some(ret), Some(t)) = (&sig.ret, &decl.ret)
            && !matches!(
                ret,
                Type::I64 | Type::F64 | Type::Bool | Type::Str | Type::Unit
            )
        {
            self.error(Diagnostic::new(
                DiagKind::BadMain,
                t.span,
                format!("`main` must return `i64`, `f64`, `bool`, `str` or nothing, not `{ret}`"),
            ));
        }
    }

    fn native(&mut self, sig: &ast::FnSig) -> NativeImport {
        let params: Vec<Option<Type>> = sig
            .params
            .iter()
            .map(|p| self.resolve_type(&p.ty))
            .collect();
        let ret = match &sig.ret {
            Some(t) => self.resolve_type(t),
            None => Some(Type::Unit),
        };
        let mut import = NativeImport {
            name: sig.name.name.clone(),
            host: 0,
            params: params
                .iter()
                .map(|t| t.clone().unwrap_or(Type::Unit))
                .collect(),
            ret: ret.clone().unwrap_or(Type::Unit),
            span: sig.span,
        };
        let Some((index, host)) = host_sig(&sig.name.name) else {
            let names: Vec<&str> = host_signatures().iter().map(|h| h.name).collect();
            self.error(
                Diagnostic::new(
                    DiagKind::BadNative,
                    sig.name.span,
                    format!("`{}` is not a host function", sig.name.name),
                )
                .with_note(format!("the host provides: {}", names.join(", "))),
            );
            return import;
        };
        import.host = index;
        if params.iter().any(Option::is_none) || ret.is_none() {
            return import;
        }
        let host_params: Vec<Type> = host.params.iter().map(|t| t.to_type()).collect();
        if import.params != host_params || import.ret != host.ret.to_type() {
            self.error(
                Diagnostic::new(
                    DiagKind::BadNative,
                    sig.span,
                    format!("`{}` is declared differently by the host", sig.name.name),
                )
                .with_note(format!(
                    "the host declares `{}` as `{}`",
                    host.name,
                    host.signature()
                )),
            );
        }
        import
    }

    // ---- pass 2 ----

    fn check_globals(&mut self, module: &ast::Module) {
        let mut index = 0;
        for item in &module.items {
            let Item::Global(decl) = item else { continue };
            let id = GlobalId(index as u32);
            self.f = FnState {
                global_limit: Some(index),
                fn_name: decl.name.name.clone(),
                ..FnState::default()
            };
            let checked = self.statement(|ck| ck.var_init(decl));
            index += 1;
            let Some((ty, init)) = checked else { continue };
            self.globals[id.index()].ty = ty.clone();
            self.global_types[id.index()] = Some(ty.clone());
            self.init_stmts.push(Stmt {
                kind: StmtKind::Assign {
                    place: Place {
                        kind: PlaceKind::Global(id),
                        ty,
                        span: decl.name.span,
                    },
                    op: None,
                    op_span: decl.eq_span,
                    value: init,
                },
                span: decl.span,
            });
        }
        self.f = FnState::default();
    }

    // ---- pass 3 ----

    fn check_bodies(&mut self, module: &ast::Module) {
        let mut index = 0;
        for item in &module.items {
            let Item::Fn(decl) = item else { continue };
            let sig = self.sigs[index].clone();
            index += 1;
            let function = self.function(decl, sig);
            self.functions.push(function);
        }
        for (class, decl) in std::mem::take(&mut self.methods_in_order) {
            let sig = self.sigs[index].clone();
            index += 1;
            let Some(decl) = decl else {
                let function = self.constructor(class, sig);
                self.functions.push(function);
                continue;
            };
            let has_self = decl.sig.self_param.is_some() && sig.class == Some(class);
            self.f.self_class = has_self.then_some(class);
            let function = self.function(&decl, sig);
            self.functions.push(function);
        }
    }

    fn function(&mut self, decl: &ast::FnDecl, sig: FnSigInfo) -> Function {
        let self_class = self.f.self_class.take();
        self.f = FnState {
            ret: sig.ret.clone(),
            self_class,
            fn_name: sig.name.clone(),
            ..FnState::default()
        };
        self.f.scope_marks.push(0);
        if let (Some(class), Some(span)) = (self_class, decl.sig.self_param) {
            let ty = self.handle_type(class, false);
            let name = ast::Ident {
                name: "self".to_string(),
                span,
            };
            self.add_local(&name, Some(ty), LocalWhat::Param);
        }
        for (p, ty) in decl.sig.params.iter().zip(&sig.params) {
            self.add_local(&p.name, ty.clone(), LocalWhat::Param);
        }
        let errors_before = self.diags.len();
        let body = self.block(&decl.body);
        let ret_span = decl.sig.ret.as_ref().map_or(decl.sig.name.span, |t| t.span);
        self.check_falls_off(
            &body,
            &sig.ret,
            errors_before,
            decl.body.span,
            ret_span,
            &sig.name,
        );
        let f = std::mem::take(&mut self.f);
        Function {
            name: sig.name,
            param_count: (decl.sig.params.len() + usize::from(self_class.is_some())) as u32,
            ret: sig.ret.unwrap_or(Type::Unit),
            locals: f.locals,
            body,
            span: decl.sig.span,
            name_span: sig.name_span,
            class: sig.class,
            captures: None,
        }
    }

    /// The missing-return check of a body that returns `ret`, if it checked without errors
    /// (a broken statement is missing from `body`, so only a clean body can be judged).
    fn check_falls_off(
        &mut self,
        body: &Block,
        ret: &Option<Type>,
        errors_before: usize,
        body_span: Span,
        ret_span: Span,
        name: &str,
    ) {
        if let Some(ret) = ret
            && *ret != Type::Unit
            && self.diags.len() == errors_before
            && !stmt::block_diverges(body)
        {
            let end = body_span.end as usize;
            self.statement(|ck| {
                ck.error(
                    Diagnostic::new(
                        DiagKind::MissingReturn,
                        Span::new(end.saturating_sub(1), end),
                        format!("`{name}` can reach its end without returning a value"),
                    )
                    .with_label(ret_span, format!("`{name}` returns `{ret}`")),
                )
            });
        }
    }

    // ---- locals and scopes ----

    fn add_local(&mut self, name: &ast::Ident, ty: Option<Type>, what: LocalWhat) -> LocalId {
        let id = LocalId(self.f.locals.len() as u32);
        self.f.locals.push(Local {
            name: name.name.clone(),
            ty: ty.clone().unwrap_or(Type::Unit),
            mutable: what == LocalWhat::Var,
            span: name.span,
        });
        self.f.info.push(LocalInfo { ty, what });
        self.f.names.push((name.name.clone(), id));
        id
    }

    fn open_scope(&mut self) {
        self.f.scope_marks.push(self.f.names.len());
    }

    fn close_scope(&mut self) {
        let mark = self.f.scope_marks.pop().unwrap_or(0);
        self.f.names.truncate(mark);
    }

    /// A local of the current function; in a lambda, also an enclosing function's local,
    /// which becomes a capture (of every lambda in between, too).
    fn lookup_local(&mut self, name: &str) -> Option<LocalId> {
        if let Some(id) = self.f.visible(name) {
            return Some(id);
        }
        self.f.lambda.as_ref()?;
        self.enclosing.push(std::mem::take(&mut self.f));
        let id = closure::resolve_capture(&mut self.enclosing, name);
        self.f = self.enclosing.pop().unwrap_or_default();
        id
    }

    /// A module-level name, with the rule that a module variable's initializer sees only the
    /// variables declared before it.
    fn lookup_module(&mut self, name: &str, span: Span) -> Result<Option<ModName>, ()> {
        let Some(&(what, decl_span)) = self.names.get(name) else {
            return Ok(None);
        };
        if let (ModName::Global(id), Some(limit)) = (what, self.f.global_limit)
            && id.index() >= limit
        {
            self.error(
                Diagnostic::new(
                    DiagKind::UnknownName,
                    span,
                    format!("`{name}` is not declared yet at this point of the module"),
                )
                .with_label(decl_span, "declared here")
                .with_note("a module variable's initializer may use only the ones above it"),
            );
            return Err(());
        }
        Ok(Some(what))
    }
}
