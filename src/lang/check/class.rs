//! Classes: bases, field layouts, methods, overrides and host interfaces (pass 1), and the
//! conversions between handle types that every other check uses.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Checker, FnSigInfo, ModName};
use crate::lang::ast::{self, ClassMember, Item};
use crate::lang::diag::{DiagKind, Diagnostic};
use crate::lang::hir::{
    self, ClassId, Expr, ExprKind, FuncId, Interface, Method, MethodKind, Type,
};
use crate::lang::span::Span;

/// A class as the checker builds it.
#[derive(Debug, Clone)]
pub(super) struct ClassInfo {
    pub name: String,
    pub name_span: Span,
    /// Index of its declaration in the module's items.
    pub item: usize,
    pub parent: Option<ClassId>,
    pub interface: Option<Interface>,
    /// Every field, inherited first; `mutable` is false for `let` fields.
    pub fields: Vec<FieldInfo>,
    pub methods: Vec<Method>,
    /// The synthesized constructor `C.new` that `new C(args)` calls, when the class has an
    /// `init` (its own or inherited).
    pub ctor: Option<FuncId>,
}

/// A field as the checker knows it.
#[derive(Debug, Clone)]
pub(super) struct FieldInfo {
    pub field: hir::Field,
    pub mutable: bool,
}

/// What converting an expression to a wanted type gave.
pub(super) enum Coerced {
    /// Converted (possibly wrapped in a run-time null check).
    Ok(Expr),
    /// Not convertible, nothing reported: the caller reports its own mismatch.
    Mismatch(Expr),
    /// Not convertible, and reported.
    Reported,
}

impl Checker {
    /// Pass 0: give every class an id and its name, so types and bases can name classes
    /// declared further down.
    pub(super) fn declare_class_names(&mut self, module: &ast::Module) {
        for (i, item) in module.items.iter().enumerate() {
            let Item::Class(class) = item else { continue };
            let id = ClassId(self.classes.len() as u32);
            if !self.declare(&class.name, ModName::Class(id)) {
                continue;
            }
            self.classes.push(ClassInfo {
                name: class.name.name.clone(),
                name_span: class.name.span,
                item: i,
                parent: None,
                interface: None,
                fields: Vec::new(),
                methods: Vec::new(),
                ctor: None,
            });
        }
    }

    /// Pass 1 for classes: bases, then layouts and method signatures, parents first.
    pub(super) fn declare_classes(&mut self, module: &ast::Module) {
        let decl_of = |ck: &Checker, id: ClassId| -> ast::ClassDecl {
            match &module.items[ck.classes[id.index()].item] {
                Item::Class(c) => c.clone(),
                _ => unreachable!("class ids index class items"),
            }
        };
        for i in 0..self.classes.len() {
            let decl = decl_of(self, ClassId(i as u32));
            if let Some(base) = &decl.base {
                self.statement(|ck| ck.resolve_base(ClassId(i as u32), base));
            }
        }
        for id in self.class_order() {
            let decl = decl_of(self, id);
            self.class_members(id, &decl);
        }
    }

    fn resolve_base(&mut self, id: ClassId, base: &ast::Ident) {
        match self.names.get(&base.name) {
            Some((ModName::Class(parent), _)) => self.classes[id.index()].parent = Some(*parent),
            _ => match Interface::named(&base.name) {
                Some(iface) => self.classes[id.index()].interface = Some(iface),
                None => self.error(
                    Diagnostic::new(
                        DiagKind::UnknownName,
                        base.span,
                        format!("unknown base class or interface `{}`", base.name),
                    )
                    .with_note("the host interfaces are `Hook` and `Bench`"),
                ),
            },
        }
    }

    /// Classes with parents before children; a class in an inheritance cycle is reported and
    /// loses its parent.
    fn class_order(&mut self) -> Vec<ClassId> {
        let n = self.classes.len();
        let mut order = Vec::with_capacity(n);
        let mut placed = vec![false; n];
        for start in 0..n {
            let mut chain = Vec::new();
            let mut c = Some(ClassId(start as u32));
            while let Some(id) = c {
                if placed[id.index()] {
                    break;
                }
                if chain.contains(&id) {
                    let info = &self.classes[id.index()];
                    let (span, name) = (info.name_span, info.name.clone());
                    self.statement(|ck| {
                        ck.error(Diagnostic::new(
                            DiagKind::BadClass,
                            span,
                            format!("class `{name}` inherits from itself"),
                        ))
                    });
                    self.classes[id.index()].parent = None;
                    break;
                }
                chain.push(id);
                c = self.classes[id.index()].parent;
            }
            for id in chain.into_iter().rev() {
                if !placed[id.index()] {
                    placed[id.index()] = true;
                    order.push(id);
                }
            }
        }
        order
    }

    fn class_members(&mut self, id: ClassId, decl: &ast::ClassDecl) {
        let (mut fields, mut methods) = match self.classes[id.index()].parent {
            Some(p) => (
                self.classes[p.index()].fields.clone(),
                self.classes[p.index()].methods.clone(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let class_name = decl.name.name.clone();
        let own_start = methods.len();
        let mut own_methods: HashMap<String, Span> = HashMap::new();
        for member in &decl.members {
            match member {
                ClassMember::Field(f) => {
                    if let Some(field) = self.statement(|ck| ck.field_decl(&fields, f)) {
                        fields.push(field);
                    }
                }
                ClassMember::Method(kind, m) => {
                    let kind = &match kind {
                        ast::MethodKind::Plain => MethodKind::Plain,
                        ast::MethodKind::Virtual => MethodKind::Virtual,
                        ast::MethodKind::Override => MethodKind::Override,
                        ast::MethodKind::Static => MethodKind::Static,
                        // A constructor is a plain method that only `new` and `super.init`
                        // call.
                        ast::MethodKind::Init => MethodKind::Plain,
                    };
                    let func = FuncId(self.sigs.len() as u32);
                    let mut sig = self.statement(|ck| ck.fn_sig(&m.sig, true));
                    sig.name = format!("{class_name}.{}", m.sig.name.name);
                    let arrays = sig
                        .params
                        .iter()
                        .chain([&sig.ret])
                        .flatten()
                        .any(|t| matches!(t, Type::Array(..)));
                    if arrays && matches!(kind, MethodKind::Virtual | MethodKind::Override) {
                        self.statement(|ck| {
                            ck.error(Diagnostic::new(
                                DiagKind::BadClass,
                                m.sig.name.span,
                                "a virtual method takes and returns only `i64`, `f64`, `bool` and handles (no arrays)",
                            ))
                        });
                    }
                    sig.class = Some(id);
                    self.statement(|ck| ck.method_shape(*kind, &m.sig));
                    if m.sig.name.name == "init" {
                        self.statement(|ck| ck.init_shape(*kind, &m.sig));
                    }
                    self.sigs.push(sig);
                    self.methods_in_order.push((id, Some(m.clone())));
                    let name = &m.sig.name;
                    if let Some(first) = own_methods.insert(name.name.clone(), name.span) {
                        self.statement(|ck| {
                            ck.error(
                                Diagnostic::new(
                                    DiagKind::Duplicate,
                                    name.span,
                                    format!("`{}` is defined twice in `{class_name}`", name.name),
                                )
                                .with_label(first, "first defined here"),
                            )
                        });
                        continue;
                    }
                    if fields.iter().any(|f| f.field.name == name.name) {
                        self.statement(|ck| {
                            ck.error(Diagnostic::new(
                                DiagKind::Duplicate,
                                name.span,
                                format!("`{}` is already a field of `{class_name}`", name.name),
                            ))
                        });
                        continue;
                    }
                    let method = Method {
                        name: name.name.clone(),
                        kind: *kind,
                        func,
                        owner: id,
                    };
                    let inherited = methods[..own_start]
                        .iter()
                        .position(|b| b.name == name.name);
                    // A class's own `init` replaces its base's (which it may call as
                    // `super.init(...)`): constructors are not inherited methods.
                    if name.name != "init" {
                        self.statement(|ck| {
                            ck.check_override(&methods, inherited, &method, name.span)
                        });
                    }
                    match inherited {
                        Some(i) => methods[i] = method,
                        None => methods.push(method),
                    }
                }
            }
        }
        let init = methods.iter().find(|m| m.name == "init").map(|m| m.func);
        if let Some(init) = init {
            // `new C(args)` calls `C.new(args)`: a fresh object, then `init` on it.
            let ctor = FuncId(self.sigs.len() as u32);
            let init_sig = self.sigs[init.index()].clone();
            self.sigs.push(FnSigInfo {
                name: format!("{class_name}.new"),
                params: init_sig.params,
                ret: Some(self.handle_type(id, false)),
                name_span: init_sig.name_span,
                class: Some(id),
            });
            self.methods_in_order.push((id, None));
            self.classes[id.index()].ctor = Some(ctor);
        }
        let info = &mut self.classes[id.index()];
        info.fields = fields;
        info.methods = methods;
        if let Some(iface) = info.interface {
            let span = decl.name.span;
            self.statement(|ck| ck.check_interface(id, iface, span));
        }
    }

    fn field_decl(&mut self, fields: &[FieldInfo], f: &ast::VarDecl) -> Option<FieldInfo> {
        if let Some(first) = fields.iter().find(|x| x.field.name == f.name.name) {
            let first = first.field.span;
            self.error(
                Diagnostic::new(
                    DiagKind::Duplicate,
                    f.name.span,
                    format!(
                        "field `{}` is defined twice (a class also has its base's fields)",
                        f.name.name
                    ),
                )
                .with_label(first, "first defined here"),
            );
            return None;
        }
        if let Some(t) = &f.ty
            && let Some(Type::Handle {
                nullable: false,
                name,
                ..
            }) = self.resolve_type(t)
        {
            self.error(
                Diagnostic::new(
                    DiagKind::BadClass,
                    t.span,
                    format!(
                        "a field cannot have the non-nullable type `{name}`: fields start as constants"
                    ),
                )
                .with_note(format!("declare it `{name}?` with `= null`")),
            );
            return None;
        }
        if let Some(info) = self.fn_field_null(f) {
            return info;
        }
        let not_constant = |span| {
            Diagnostic::new(
                DiagKind::BadClass,
                span,
                "a field initializer must be a constant expression: literals, module `let` \
                 constants, arithmetic, comparisons and casts of those, `null`, `vec<T>()`, \
                 string literals without `${}`, and array literals or repeats of those",
            )
            .with_note(
                "a reload gives added fields their initializer without running code; set \
                 other values in `init` or after `new`",
            )
        };
        let Some((ty, init)) = self.var_init(f) else {
            // A name the checker cannot type yet (a module `var`, a constant that is not one)
            // fails without a diagnostic of its own: never drop the field silently.
            if !self.reported {
                self.error(not_constant(f.init.span));
            }
            return None;
        };
        let mut leaves = Vec::new();
        match self.fold(&init) {
            Some(value) => value.leaves(&mut leaves),
            None => {
                self.error(not_constant(init.span));
                return None;
            }
        }
        let leaf_ok = |t: &Type| t.is_scalar() || t.is_managed();
        let mut leaf = &ty;
        while let Type::Array(elem, _) = leaf {
            leaf = elem;
        }
        if !leaf_ok(leaf) {
            self.error(Diagnostic::new(
                DiagKind::BadClass,
                f.name.span,
                format!(
                    "a field must be `i64`, `f64`, `bool`, a handle, a vec, a string or an \
                     array of those, not `{ty}`"
                ),
            ));
            return None;
        }
        let (array, (bits, text)) = if matches!(ty, Type::Array(..)) {
            (Some(leaves), (0, None))
        } else {
            (None, leaves.pop().unwrap_or((0, None)))
        };
        Some(FieldInfo {
            field: hir::Field {
                name: f.name.name.clone(),
                ty,
                init: bits,
                text,
                array,
                span: f.name.span,
            },
            mutable: f.mutable,
        })
    }

    /// A field of a fn type declared `= null`, or an array of them declared with nulls
    /// (`[null, null]`, `[null; 2]`, nested): it starts not initialized (cells 0: a call of one
    /// raises `NullClosure`, `"${o.f}"` shows `<fn: not initialized>`), as a closure is no
    /// constant a reload could give an added field. `None` for any other declaration;
    /// `Some(None)` when the type is in error (reported).
    fn fn_field_null(&mut self, f: &ast::VarDecl) -> Option<Option<FieldInfo>> {
        let t = f.ty.as_ref()?;
        if !null_closures(t, &f.init) {
            return None;
        }
        let ty = self.resolve_type(t);
        Some(ty.map(|ty| {
            // An array's leaves: one 0 per closure cell (the type's size is checked).
            let array =
                matches!(ty, Type::Array(..)).then(|| vec![(0, None); ty.scalars() as usize]);
            FieldInfo {
                field: hir::Field {
                    name: f.name.name.clone(),
                    ty,
                    init: 0,
                    text: None,
                    array,
                    span: f.name.span,
                },
                mutable: f.mutable,
            }
        }))
    }

    /// `self` where it belongs: every method has it first, a static function has none.
    fn method_shape(&mut self, kind: MethodKind, sig: &ast::FnSig) {
        match (kind, sig.self_param) {
            (MethodKind::Static, Some(span)) => self.error(Diagnostic::new(
                DiagKind::BadClass,
                span,
                "a `static fn` has no `self`",
            )),
            (MethodKind::Static, None) | (_, Some(_)) => {}
            (_, None) => self.error(
                Diagnostic::new(
                    DiagKind::BadClass,
                    sig.name.span,
                    format!(
                        "method `{}` needs `self` as its first parameter",
                        sig.name.name
                    ),
                )
                .with_note(
                    "a function without `self` is declared `static fn` and called as `C.f()`",
                ),
            ),
        }
    }

    /// `init(self, ...)`: a plain method with `self` that returns nothing.
    fn init_shape(&mut self, kind: MethodKind, sig: &ast::FnSig) {
        if kind != MethodKind::Plain {
            self.error(
                Diagnostic::new(
                    DiagKind::BadClass,
                    sig.name.span,
                    "`init` is the constructor: it cannot be `virtual`, `override` or `static`",
                )
                .with_note("declare it `init(self, ...) { ... }`"),
            );
        } else if let Some(ret) = &sig.ret {
            self.error(
                Diagnostic::new(
                    DiagKind::BadClass,
                    ret.span,
                    "`init` returns nothing: `new C(...)` gives the object",
                )
                .with_note("remove the `-> T`"),
            );
        }
    }

    fn check_override(
        &mut self,
        methods: &[Method],
        inherited: Option<usize>,
        method: &Method,
        span: Span,
    ) {
        let name = &method.name;
        let Some(i) = inherited else {
            if method.kind == MethodKind::Override {
                self.error(Diagnostic::new(
                    DiagKind::BadClass,
                    span,
                    format!("`override fn {name}` overrides nothing: no base class has a virtual `{name}`"),
                ));
            }
            return;
        };
        let base = &methods[i];
        let base_class = self.classes[base.owner.index()].name.clone();
        if method.kind != MethodKind::Override || !base.is_virtual() {
            let note = if base.is_virtual() {
                format!("to replace it, declare this one `override fn {name}`")
            } else {
                format!(
                    "to replace it, declare it `virtual` in `{base_class}` and this one `override`"
                )
            };
            self.error(
                Diagnostic::new(
                    DiagKind::BadClass,
                    span,
                    format!("`{name}` is already defined by the base class `{base_class}`"),
                )
                .with_note(note),
            );
            return;
        }
        let (want, have) = (
            &self.sigs[base.func.index()],
            &self.sigs[method.func.index()],
        );
        if want.params != have.params || want.ret != have.ret {
            let expected = sig_text(name, want);
            self.error(
                Diagnostic::new(
                    DiagKind::BadClass,
                    span,
                    format!(
                        "`override fn {name}` has another signature than `{base_class}.{name}`"
                    ),
                )
                .with_note(format!("expected `{expected}`")),
            );
        }
    }

    fn check_interface(&mut self, id: ClassId, iface: Interface, class_span: Span) {
        let (name, params, ret) = iface.method();
        let expected = format!(
            "fn {name}(self{}) -> {ret}",
            params
                .iter()
                .map(|p| format!(", _: {p}"))
                .collect::<String>()
        );
        let info = &self.classes[id.index()];
        let class_name = info.name.clone();
        let Some(m) = info.methods.iter().find(|m| m.name == name).cloned() else {
            self.error(
                Diagnostic::new(
                    DiagKind::BadClass,
                    class_span,
                    format!(
                        "class `{class_name}` implements `{}` but has no method `{name}`",
                        iface.name()
                    ),
                )
                .with_note(format!("add `{expected}`")),
            );
            return;
        };
        let sig = &self.sigs[m.func.index()];
        let wanted: Vec<Option<Type>> = params.into_iter().map(Some).collect();
        if m.kind == MethodKind::Static || sig.params != wanted || sig.ret != Some(ret) {
            let span = sig.name_span;
            self.error(
                Diagnostic::new(
                    DiagKind::BadClass,
                    span,
                    format!(
                        "`{name}` does not have the signature `{}` requires",
                        iface.name()
                    ),
                )
                .with_label(
                    class_span,
                    format!("`{class_name}` implements `{}`", iface.name()),
                )
                .with_note(format!("expected `{expected}`")),
            );
        }
    }

    /// The handle type of a class.
    pub(super) fn handle_type(&self, id: ClassId, nullable: bool) -> Type {
        Type::Handle {
            class: id,
            name: Arc::from(self.classes[id.index()].name.as_str()),
            nullable,
        }
    }

    /// Whether `class` is `ancestor` or derives from it.
    pub(super) fn derives(&self, class: ClassId, ancestor: ClassId) -> bool {
        let mut c = Some(class);
        while let Some(id) = c {
            if id == ancestor {
                return true;
            }
            c = self.classes[id.index()].parent;
        }
        false
    }

    /// Convert `e` to `want`: equal types; `null` to a nullable handle; a handle to a handle of
    /// its class or an ancestor; a `C?` where a `C` is needed with a run-time null check.
    pub(super) fn coerce(&mut self, e: Expr, want: &Type) -> Coerced {
        if e.ty == *want {
            return Coerced::Ok(e);
        }
        if let Type::Array(elem, n) = want {
            return self.coerce_array_literal(e, elem, *n, want);
        }
        let Type::Handle {
            class: to,
            nullable: to_null,
            ..
        } = want
        else {
            return Coerced::Mismatch(e);
        };
        match &e.ty {
            Type::Null if *to_null => Coerced::Ok(Expr {
                ty: want.clone(),
                ..e
            }),
            Type::Null => {
                self.error(
                    Diagnostic::new(
                        DiagKind::TypeMismatch,
                        e.span,
                        format!("`null` where a `{want}` is needed: a `{want}` is never null"),
                    )
                    .with_note(format!("declare it `{want}?` to allow `null`")),
                );
                Coerced::Reported
            }
            Type::Handle {
                class, nullable, ..
            } if self.derives(*class, *to) => {
                let span = e.span;
                let e = if *nullable && !to_null {
                    Expr {
                        kind: ExprKind::NonNull(Box::new(e)),
                        ty: want.clone(),
                        span,
                    }
                } else {
                    Expr {
                        ty: want.clone(),
                        ..e
                    }
                };
                Coerced::Ok(e)
            }
            _ => Coerced::Mismatch(e),
        }
    }
}

impl Checker {
    /// An array literal or repeat converted item by item to `[elem; n]` (`[null, null]` to
    /// `[C?; 2]`, `[d, d]` to `[Base; 2]`); any other array is a mismatch.
    fn coerce_array_literal(&mut self, e: Expr, elem: &Type, n: u32, want: &Type) -> Coerced {
        let Expr { kind, ty, span } = e;
        // An item that does not convert: reported by the caller with the whole literal's type.
        let item_mismatch = |ty| {
            Coerced::Mismatch(Expr {
                kind: ExprKind::ArrayLit(Vec::new()),
                ty,
                span,
            })
        };
        let kind = match kind {
            ExprKind::ArrayLit(items) if items.len() == n as usize => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    match self.coerce(item, elem) {
                        Coerced::Ok(item) => out.push(item),
                        Coerced::Reported => return Coerced::Reported,
                        Coerced::Mismatch(_) => return item_mismatch(ty),
                    }
                }
                ExprKind::ArrayLit(out)
            }
            ExprKind::ArrayRepeat(item, count) if count == n => match self.coerce(*item, elem) {
                Coerced::Ok(item) => ExprKind::ArrayRepeat(Box::new(item), count),
                Coerced::Reported => return Coerced::Reported,
                Coerced::Mismatch(_) => return item_mismatch(ty),
            },
            kind => return Coerced::Mismatch(Expr { kind, ty, span }),
        };
        Coerced::Ok(Expr {
            kind,
            ty: want.clone(),
            span,
        })
    }
}

/// `fn name(self, a: T) -> R` for messages.
fn sig_text(name: &str, sig: &FnSigInfo) -> String {
    let params: String = sig
        .params
        .iter()
        .map(|p| {
            format!(
                ", _: {}",
                p.as_ref().map_or("?".to_string(), |t| t.to_string())
            )
        })
        .collect();
    let ret = sig.ret.as_ref().map_or("?".to_string(), |t| t.to_string());
    format!("fn {name}(self{params}) -> {ret}")
}

impl ClassInfo {
    /// The checked class.
    pub(super) fn to_hir(&self) -> hir::Class {
        hir::Class {
            name: self.name.clone(),
            parent: self.parent,
            interface: self.interface,
            fields: self.fields.iter().map(|f| f.field.clone()).collect(),
            methods: self.methods.clone(),
            name_span: self.name_span,
        }
    }
}

/// `init` is the nulls a field of type `t` of closures starts with: `null` for `fn(..)`, and
/// for `[T; n]` an array literal of `n` such items or a repeat `[item; n]` of one.
fn null_closures(t: &ast::TypeExpr, init: &ast::Expr) -> bool {
    /// `t` is a fn type, or an array of them (so `[]` of `[i64; 0]` is not one).
    fn of_closures(t: &ast::TypeExpr) -> bool {
        match &t.kind {
            ast::TypeKind::Fn(..) => true,
            ast::TypeKind::Array(elem, _) => of_closures(elem),
            _ => false,
        }
    }
    if !of_closures(t) {
        return false;
    }
    match (&t.kind, &init.kind) {
        (ast::TypeKind::Fn(..), ast::ExprKind::Null) => true,
        (ast::TypeKind::Array(elem, n), ast::ExprKind::ArrayLit(items)) => {
            items.len() as u64 == *n && items.iter().all(|item| null_closures(elem, item))
        }
        (ast::TypeKind::Array(elem, n), ast::ExprKind::ArrayRepeat(item, count)) => {
            matches!(count.kind, ast::ExprKind::Int(c) if c == *n) && null_closures(elem, item)
        }
        _ => false,
    }
}
