//! Classes in the checked program: layouts, methods and the host interfaces.

use super::{ClassId, FuncId, Type};
use crate::lang::span::Span;

/// A host interface a class implements (the runtime's `Hook` and `Bench` traits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Interface {
    /// `Hook { fn call(self) -> i64 }`
    Hook,
    /// `Bench { fn run(self, n: i64) -> i64 }`
    Bench,
}

impl Interface {
    /// By name, if the host provides it.
    pub fn named(name: &str) -> Option<Interface> {
        match name {
            "Hook" => Some(Interface::Hook),
            "Bench" => Some(Interface::Bench),
            _ => None,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Interface::Hook => "Hook",
            Interface::Bench => "Bench",
        }
    }

    /// Its one method: name, parameter types after `self`, return type.
    pub fn method(self) -> (&'static str, Vec<Type>, Type) {
        match self {
            Interface::Hook => ("call", vec![], Type::I64),
            Interface::Bench => ("run", vec![Type::I64], Type::I64),
        }
    }
}

/// A script class.
///
/// Objects are the runtime's (`runtime::object`): a shell the handles point at, and a state
/// block with one 8-byte cell per field. Field `i` of [`Class::fields`] is cell `i`: the
/// parent's fields come first, so a field keeps its index in every derived class.
#[derive(Debug, Clone)]
pub struct Class {
    /// Its name.
    pub name: String,
    /// The base class.
    pub parent: Option<ClassId>,
    /// The host interface it declares (`class C : Hook`), if any. A derived class of a class
    /// that implements one implements it too (it inherits the method).
    pub interface: Option<Interface>,
    /// Every field, inherited first.
    pub fields: Vec<Field>,
    /// Every method callable on it (inherited ones included, overrides replacing the base's),
    /// and its static functions.
    pub methods: Vec<Method>,
    /// The declaration's name.
    pub name_span: Span,
}

impl Class {
    /// A field's cell index by name.
    pub fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// A method (or static function) by name.
    pub fn method(&self, name: &str) -> Option<&Method> {
        self.methods.iter().find(|m| m.name == name)
    }
}

/// A field of a class.
#[derive(Debug, Clone)]
pub struct Field {
    /// Its name.
    pub name: String,
    /// Its type (a scalar, a handle, a vec, a string or an array of those).
    pub ty: Type,
    /// The initializer's bits (an `i64`, `f64::to_bits`, 0/1, 0 for `null`, for the empty vec
    /// `vec<T>()` and for `""`): field initializers are constants, so a reload can give an added
    /// field its value without running code.
    pub init: u64,
    /// A `str` field's non-empty literal (each object gets its own string of it); `init` is 0.
    pub text: Option<String>,
    /// An array field's initial value: its leaf constants flat, outermost first, each as `init`
    /// and `text` are for a scalar field (`None` for a field not of array type). Each object
    /// gets it boxed in its cell, as an array in a vec's cell is.
    pub array: Option<Vec<(u64, Option<String>)>>,
    /// The declaration.
    pub span: Span,
}

/// How a method is declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MethodKind {
    /// `fn m(self)`: called directly.
    Plain,
    /// `virtual fn m(self)`: dispatched on the object's class.
    Virtual,
    /// `override fn m(self)`: replaces a base class's virtual method.
    Override,
    /// `static fn f()`: no `self`, called as `C.f()`.
    Static,
}

/// A method of a class, as seen from that class.
#[derive(Debug, Clone)]
pub struct Method {
    /// Its name.
    pub name: String,
    /// How it is declared.
    pub kind: MethodKind,
    /// The function that implements it for this class (its local 0 is `self`, unless static).
    pub func: FuncId,
    /// The class that declared this implementation (this class or an ancestor).
    pub owner: ClassId,
}

impl Method {
    /// Whether calls dispatch on the object's class (virtual, or an override of one).
    pub fn is_virtual(&self) -> bool {
        matches!(self.kind, MethodKind::Virtual | MethodKind::Override)
    }
}
