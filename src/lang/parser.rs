//! The parser: tokens to the syntax tree ([`ast::Module`]), by recursive descent, with
//! precedence climbing for binary operators (in `parser/expr.rs`).
//!
//! Errors: a syntax error abandons the current statement (or declaration), which is skipped up
//! to its end, and parsing goes on, so a file gets one diagnostic per broken statement. An error
//! found at the end of the input is [`DiagKind::Incomplete`] (something is still open: a
//! bracket, a block, a trailing operator) and ends parsing.
//!
//! Depth: brackets, blocks and types nesting deeper than [`MAX_NESTING`] are an error (the
//! parser recurses on them), and so is an expression tree deeper than [`MAX_EXPR_DEPTH`]
//! levels, counting every operator of a chain (`1 + 1 + 1` is three levels), cast, call,
//! index and field access as well as the blocks around it: the checker, the lowering and the
//! interpreter recurse once per level, so this bound is what keeps them within their stacks.
//! Chains are built in loops here, so the parser itself stays shallow and linear whatever the
//! input.

mod expr;

use super::ast::{
    Block, ClassDecl, ClassMember, FnDecl, FnSig, ForIter, Ident, InterfaceDecl, Item, MethodKind,
    Module, Param, Stmt, StmtKind, VarDecl,
};
use super::diag::{DiagKind, Diagnostic, Diagnostics};
use super::span::Span;
use super::token::{Keyword, Punct, Token, TokenKind};

/// How deeply brackets, blocks and types may nest.
pub const MAX_NESTING: u32 = 128;

/// How many levels deep an expression may go, with the blocks and statements around it: every
/// binary operator of a chain, prefix operator, cast, call, index, field access, bracket and
/// closure body is a level. The checker needs about 3.5 KiB of stack per level in a release
/// build (more in a debug one), so a module nesting deeper than [`check::INLINE_NESTING`]
/// is checked on a thread of its own with [`check::CHECK_STACK`]; the lowering and the
/// interpreter run on the script thread (256 MiB) and need far less per level.
///
/// [`check::INLINE_NESTING`]: crate::lang::check::INLINE_NESTING
/// [`check::CHECK_STACK`]: crate::lang::check::CHECK_STACK
pub const MAX_EXPR_DEPTH: u32 = 4000;

type PResult<T> = Result<T, Diagnostic>;

/// Parse a whole module from the lexer's tokens (which end with [`TokenKind::Eof`]).
pub fn parse(tokens: &[Token]) -> Result<Module, Diagnostics> {
    let eof = Token {
        kind: TokenKind::Eof,
        span: tokens.last().map(|t| t.span).unwrap_or_default(),
    };
    let mut p = Parser {
        toks: tokens,
        eof,
        pos: 0,
        prev_end: 0,
        depth: 0,
        reach: 0,
        diags: Vec::new(),
        gt_taken: 0,
    };
    let module = p.module();
    if p.diags.is_empty() {
        Ok(module)
    } else {
        Err(Diagnostics(p.diags))
    }
}

pub(super) struct Parser<'t> {
    toks: &'t [Token],
    eof: Token,
    pos: usize,
    /// End of the last consumed token: where a node being built ends.
    prev_end: u32,
    depth: u32,
    /// The deepest level reached so far: [`Parser::depth`] plus an expression's nesting.
    reach: u32,
    diags: Vec<Diagnostic>,
    /// How many `>` of the current `>>` or `>>>` were taken as the ones closing
    /// `vec<vec<T>>`.
    gt_taken: u8,
}

impl<'t> Parser<'t> {
    fn tok(&self) -> &Token {
        self.toks.get(self.pos).unwrap_or(&self.eof)
    }

    fn kind(&self) -> &TokenKind {
        &self.tok().kind
    }

    fn nth_kind(&self, n: usize) -> &TokenKind {
        self.toks
            .get(self.pos + n)
            .map_or(&self.eof.kind, |t| &t.kind)
    }

    fn span(&self) -> Span {
        self.tok().span
    }

    fn at_eof(&self) -> bool {
        matches!(self.kind(), TokenKind::Eof)
    }

    fn bump(&mut self) -> Token {
        let t = self.tok().clone();
        if !matches!(t.kind, TokenKind::Eof) {
            self.pos += 1;
            self.prev_end = t.span.end;
        }
        t
    }

    fn is_punct(&self, p: Punct) -> bool {
        self.kind() == &TokenKind::Punct(p)
    }

    fn is_kw(&self, k: Keyword) -> bool {
        self.kind() == &TokenKind::Kw(k)
    }

    fn eat_punct(&mut self, p: Punct) -> bool {
        if self.is_punct(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn eat_kw(&mut self, k: Keyword) -> bool {
        if self.is_kw(k) {
            self.bump();
            true
        } else {
            false
        }
    }

    /// A span from `start` to the end of the last consumed token.
    fn since(&self, start: Span) -> Span {
        Span {
            start: start.start,
            end: self.prev_end.max(start.end),
        }
    }

    /// "expected X, found Y" at the current token; at the end of the input, `Incomplete`.
    fn unexpected(&self, expected: &str) -> Diagnostic {
        let tok = self.tok();
        match tok.kind {
            TokenKind::Eof => Diagnostic::new(
                DiagKind::Incomplete,
                tok.span,
                format!("unexpected end of input: expected {expected}"),
            ),
            _ => Diagnostic::new(
                DiagKind::Syntax,
                tok.span,
                format!("expected {expected}, found {}", tok.kind),
            ),
        }
    }

    fn expect_punct(&mut self, p: Punct) -> PResult<Span> {
        if self.is_punct(p) {
            Ok(self.bump().span)
        } else {
            Err(self.unexpected(&format!("`{}`", p.as_str())))
        }
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match self.kind() {
            TokenKind::Ident(name) => {
                let name = name.clone();
                let span = self.bump().span;
                Ok(Ident { name, span })
            }
            _ => Err(self.unexpected(what)),
        }
    }

    fn skip_separators(&mut self) {
        while matches!(
            self.kind(),
            TokenKind::Newline | TokenKind::Punct(Punct::Semi)
        ) {
            self.bump();
        }
    }

    /// Run `f` one level of nesting deeper, failing past [`MAX_NESTING`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_NESTING {
            return Err(Diagnostic::new(
                DiagKind::Syntax,
                self.span(),
                format!("nesting is too deep (more than {MAX_NESTING} levels)"),
            ));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    /// Record an error. Returns false when parsing must stop (the input ended).
    fn report(&mut self, diag: Diagnostic) -> bool {
        let go_on = diag.kind != DiagKind::Incomplete;
        self.diags.push(diag);
        go_on
    }

    // ---- module level ----

    fn module(&mut self) -> Module {
        let mut items = Vec::new();
        loop {
            self.skip_separators();
            if self.at_eof() {
                break;
            }
            match self.item() {
                Ok(item) => items.push(item),
                Err(diag) => {
                    if !self.report(diag) {
                        break;
                    }
                    self.sync_item();
                }
            }
        }
        Module {
            items,
            nesting: self.reach,
        }
    }

    /// Skip to the next token that can start a declaration at the top level.
    fn sync_item(&mut self) {
        let mut depth = 0usize;
        let start = self.pos;
        loop {
            match self.kind() {
                TokenKind::Eof => return,
                TokenKind::Punct(Punct::LBrace) => depth += 1,
                TokenKind::Punct(Punct::RBrace) => depth = depth.saturating_sub(1),
                TokenKind::Kw(
                    Keyword::Fn
                    | Keyword::Var
                    | Keyword::Let
                    | Keyword::Native
                    | Keyword::Class
                    | Keyword::Interface,
                ) if depth == 0 && self.pos > start => return,
                _ => {}
            }
            self.bump();
        }
    }

    fn item(&mut self) -> PResult<Item> {
        let start = self.span();
        let item = match self.kind() {
            TokenKind::Kw(Keyword::Var | Keyword::Let) => Item::Global(self.var_decl()?),
            TokenKind::Kw(Keyword::Native) => {
                self.bump();
                if !self.is_kw(Keyword::Fn) {
                    return Err(self.unexpected("`fn` after `native`"));
                }
                let mut sig = self.fn_sig()?;
                sig.span = self.since(start);
                Item::Native(sig)
            }
            TokenKind::Kw(Keyword::Fn) => Item::Fn(self.fn_decl()?),
            TokenKind::Kw(Keyword::Class) => Item::Class(self.class_decl()?),
            TokenKind::Kw(Keyword::Interface) => Item::Interface(self.interface_decl()?),
            _ => {
                return Err(
                    self.unexpected("a declaration (`fn`, `var`, `let`, `native fn` or `class`)")
                );
            }
        };
        // A declaration that ends with its body's `}` is also ended by it.
        if !matches!(item, Item::Fn(_) | Item::Class(_)) {
            self.end_of_statement()?;
        }
        Ok(item)
    }

    /// After a statement or declaration: a newline, `;`, or (not consumed) `}` or the end.
    fn end_of_statement(&mut self) -> PResult<()> {
        match self.kind() {
            TokenKind::Newline | TokenKind::Punct(Punct::Semi) => {
                self.bump();
                Ok(())
            }
            TokenKind::Punct(Punct::RBrace) | TokenKind::Eof => Ok(()),
            _ => Err(self.unexpected("the end of the statement (a newline or `;`)")),
        }
    }

    /// `var x: T = e` / `let x = e` (the caller is at `var`/`let`).
    fn var_decl(&mut self) -> PResult<VarDecl> {
        let start = self.span();
        let mutable = self.bump().kind == TokenKind::Kw(Keyword::Var);
        let name = self.ident("a variable name")?;
        let ty = if self.eat_punct(Punct::Colon) {
            Some(self.type_expr()?)
        } else {
            None
        };
        if !self.is_punct(Punct::Eq) {
            let mut d = self.unexpected("`=` and an initial value");
            if d.kind == DiagKind::Syntax {
                d = d.with_note("every variable needs an initial value: `var x: i64 = 0`");
            }
            return Err(d);
        }
        let eq_span = self.bump().span;
        let init = self.expr()?;
        Ok(VarDecl {
            mutable,
            name,
            ty,
            init,
            eq_span,
            span: self.since(start),
        })
    }

    /// `fn name(params) -> T` (the caller is at `fn`).
    fn fn_sig(&mut self) -> PResult<FnSig> {
        let start = self.span();
        self.bump();
        let name = self.ident("a function name")?;
        self.sig_after_name(start, name)
    }

    /// `(params) -> T` after the name, for a signature that began at `start`.
    fn sig_after_name(&mut self, start: Span, name: Ident) -> PResult<FnSig> {
        self.expect_punct(Punct::LParen)?;
        let mut params = Vec::new();
        let mut self_param = None;
        while !self.is_punct(Punct::RParen) {
            if self.is_kw(Keyword::SelfValue) && params.is_empty() && self_param.is_none() {
                self_param = Some(self.bump().span);
            } else {
                params.push(self.param()?);
            }
            if !self.eat_punct(Punct::Comma) {
                break;
            }
        }
        self.expect_punct(Punct::RParen)?;
        let ret = if self.eat_punct(Punct::Arrow) {
            Some(self.type_expr()?)
        } else {
            None
        };
        Ok(FnSig {
            name,
            params,
            self_param,
            ret,
            span: self.since(start),
        })
    }

    fn param(&mut self) -> PResult<Param> {
        let name = self.ident("a parameter name")?;
        self.expect_punct(Punct::Colon)?;
        let ty = self.type_expr()?;
        Ok(Param { name, ty })
    }

    fn fn_decl(&mut self) -> PResult<FnDecl> {
        let start = self.span();
        let sig = self.fn_sig()?;
        self.fn_body(start, sig)
    }

    /// `init(self, params) { body }`: a declaration whose first word is its name (the caller
    /// is at the name).
    fn fn_decl_named(&mut self) -> PResult<FnDecl> {
        let start = self.span();
        let name = self.ident("a constructor name")?;
        let sig = self.sig_after_name(start, name)?;
        self.fn_body(start, sig)
    }

    fn fn_body(&mut self, start: Span, mut sig: FnSig) -> PResult<FnDecl> {
        // `fn f()` and its `{` may be on different lines.
        if matches!(self.kind(), TokenKind::Newline)
            && self.nth_kind(1) == &TokenKind::Punct(Punct::LBrace)
        {
            self.bump();
        }
        let body = self.block()?;
        sig.span = self.since(start);
        Ok(FnDecl { sig, body })
    }

    fn class_decl(&mut self) -> PResult<ClassDecl> {
        let start = self.span();
        self.bump();
        let name = self.ident("a class name")?;
        let base = if self.eat_punct(Punct::Colon) {
            Some(self.ident("a base class or interface name")?)
        } else {
            None
        };
        self.expect_punct(Punct::LBrace)?;
        let mut members = Vec::new();
        loop {
            self.skip_separators();
            if self.eat_punct(Punct::RBrace) {
                break;
            }
            let member = match self.kind() {
                TokenKind::Kw(Keyword::Var | Keyword::Let) => ClassMember::Field(self.var_decl()?),
                _ => {
                    let kind = if self.eat_kw(Keyword::Virtual) {
                        MethodKind::Virtual
                    } else if self.eat_kw(Keyword::Override) {
                        MethodKind::Override
                    } else if self.eat_kw(Keyword::Static) {
                        MethodKind::Static
                    } else {
                        MethodKind::Plain
                    };
                    let init = kind == MethodKind::Plain
                        && matches!(self.kind(), TokenKind::Ident(w) if w == "init")
                        && self.nth_kind(1) == &TokenKind::Punct(Punct::LParen);
                    if init {
                        ClassMember::Method(MethodKind::Init, self.fn_decl_named()?)
                    } else {
                        if !self.is_kw(Keyword::Fn) {
                            return Err(self.unexpected(
                                "a field (`var`, `let`), a method (`fn`) or a constructor (`init`)",
                            ));
                        }
                        ClassMember::Method(kind, self.fn_decl()?)
                    }
                }
            };
            // A method ends with its body's `}`, which also ends it.
            if matches!(member, ClassMember::Field(_)) {
                self.end_of_statement()?;
            }
            members.push(member);
        }
        Ok(ClassDecl {
            name,
            base,
            members,
            span: self.since(start),
        })
    }

    fn interface_decl(&mut self) -> PResult<InterfaceDecl> {
        let start = self.span();
        self.bump();
        let name = self.ident("an interface name")?;
        let mut methods = Vec::new();
        if self.eat_punct(Punct::LBrace) {
            loop {
                self.skip_separators();
                if self.eat_punct(Punct::RBrace) {
                    break;
                }
                if !self.is_kw(Keyword::Fn) {
                    return Err(self.unexpected("a method signature (`fn`)"));
                }
                methods.push(self.fn_sig()?);
                self.end_of_statement()?;
            }
        }
        Ok(InterfaceDecl {
            name,
            methods,
            span: self.since(start),
        })
    }

    // ---- statements ----

    /// `{ statements }`.
    fn block(&mut self) -> PResult<Block> {
        self.nested(|p| {
            let start = p.expect_punct(Punct::LBrace)?;
            let mut stmts = Vec::new();
            loop {
                p.skip_separators();
                if p.eat_punct(Punct::RBrace) {
                    break;
                }
                if p.at_eof() {
                    return Err(p
                        .unexpected("`}`")
                        .with_label(start, "this block is not closed"));
                }
                match p.stmt() {
                    Ok(stmt) => stmts.push(stmt),
                    Err(diag) => {
                        if diag.kind == DiagKind::Incomplete {
                            return Err(diag);
                        }
                        p.diags.push(diag);
                        p.sync_stmt();
                    }
                }
            }
            Ok(Block {
                stmts,
                span: p.since(start),
            })
        })
    }

    /// Skip to the end of the broken statement: a newline or `;` outside brackets, or (not
    /// consumed) the `}` closing the enclosing block.
    fn sync_stmt(&mut self) {
        let mut depth = 0usize;
        loop {
            match self.kind() {
                TokenKind::Eof => return,
                TokenKind::Newline | TokenKind::Punct(Punct::Semi) if depth == 0 => {
                    self.bump();
                    return;
                }
                TokenKind::Punct(Punct::RBrace) if depth == 0 => return,
                TokenKind::Punct(Punct::LBrace) => depth += 1,
                TokenKind::Punct(Punct::RBrace) => depth -= 1,
                _ => {}
            }
            self.bump();
        }
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        let start = self.span();
        let kind = match self.kind() {
            TokenKind::Kw(Keyword::Let | Keyword::Var) => StmtKind::Var(self.var_decl()?),
            TokenKind::Kw(Keyword::If) => self.if_stmt()?,
            TokenKind::Kw(Keyword::While) => {
                self.bump();
                let cond = self.expr()?;
                let body = self.block()?;
                StmtKind::While { cond, body }
            }
            TokenKind::Kw(Keyword::For) => {
                self.bump();
                let var = self.ident("a loop variable name")?;
                if !self.eat_kw(Keyword::In) {
                    return Err(self.unexpected("`in`"));
                }
                let first = self.expr()?;
                let inclusive = self.is_punct(Punct::DotDotEq);
                let iter = if self.eat_punct(Punct::DotDot) || self.eat_punct(Punct::DotDotEq) {
                    let end = self.expr()?;
                    // `step` is a word only here: it stays free as a name elsewhere.
                    let step = match self.kind() {
                        TokenKind::Ident(w) if w == "step" => {
                            let at = self.bump().span;
                            Some(Box::new((self.expr()?, at)))
                        }
                        _ => None,
                    };
                    ForIter::Range {
                        start: first,
                        end,
                        inclusive,
                        step,
                    }
                } else {
                    ForIter::Each(first)
                };
                let body = self.block()?;
                StmtKind::For { var, iter, body }
            }
            TokenKind::Kw(Keyword::Break) => {
                self.bump();
                StmtKind::Break
            }
            TokenKind::Kw(Keyword::Continue) => {
                self.bump();
                StmtKind::Continue
            }
            TokenKind::Kw(Keyword::Return) => {
                self.bump();
                let value = match self.kind() {
                    TokenKind::Newline
                    | TokenKind::Eof
                    | TokenKind::Punct(Punct::Semi | Punct::RBrace) => None,
                    _ => Some(self.expr()?),
                };
                StmtKind::Return(value)
            }
            TokenKind::Punct(Punct::LBrace) => StmtKind::Block(self.block()?),
            TokenKind::Kw(
                k @ (Keyword::Fn
                | Keyword::Native
                | Keyword::Class
                | Keyword::Interface
                | Keyword::Static
                | Keyword::Virtual
                | Keyword::Override),
            ) => {
                return Err(Diagnostic::new(
                    DiagKind::Syntax,
                    self.span(),
                    format!(
                        "`{}` declarations are only allowed at the top level",
                        k.as_str()
                    ),
                ));
            }
            _ => self.expr_or_assign()?,
        };
        let span = self.since(start);
        // The `}` that closes a block statement also ends it: `if c { return 1 } return 2`.
        if !matches!(
            kind,
            StmtKind::If { .. }
                | StmtKind::While { .. }
                | StmtKind::For { .. }
                | StmtKind::Block(_)
        ) {
            self.end_of_statement()?;
        }
        Ok(Stmt { kind, span })
    }

    fn if_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let cond = self.expr()?;
        let then_block = self.block()?;
        // `else` may start the next line.
        if matches!(self.kind(), TokenKind::Newline)
            && self.nth_kind(1) == &TokenKind::Kw(Keyword::Else)
        {
            self.bump();
        }
        let else_block = if self.eat_kw(Keyword::Else) {
            if self.is_kw(Keyword::If) {
                let start = self.span();
                let kind = self.nested(|p| p.if_stmt())?;
                let span = self.since(start);
                Some(Block {
                    stmts: vec![Stmt { kind, span }],
                    span,
                })
            } else {
                Some(self.block()?)
            }
        } else {
            None
        };
        Ok(StmtKind::If {
            cond,
            then_block,
            else_block,
        })
    }

    fn expr_or_assign(&mut self) -> PResult<StmtKind> {
        let target = self.expr()?;
        let op = match self.kind() {
            TokenKind::Punct(p) => match p {
                Punct::Eq => Some(None),
                _ => expr::compound_op(*p).map(Some),
            },
            _ => None,
        };
        let Some(op) = op else {
            return Ok(StmtKind::Expr(target));
        };
        let op_span = self.bump().span;
        let value = self.expr()?;
        Ok(StmtKind::Assign {
            target,
            op,
            op_span,
            value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::ast::{ExprKind, StmtKind};
    use crate::lang::lexer::lex;
    use crate::lang::span::SourceFile;

    fn parse_text(text: &str) -> Result<Module, Diagnostics> {
        parse(&lex(&SourceFile::new("t", text)).unwrap())
    }

    fn body_of_first_fn(m: &Module) -> &Block {
        match &m.items[0] {
            Item::Fn(f) => &f.body,
            other => panic!("not a fn: {other:?}"),
        }
    }

    #[test]
    fn precedence_is_rust_like() {
        let m = parse_text("fn f() { x = 1 + 2 * 3 << 1 & 7 == 2 || a && b }").unwrap();
        let StmtKind::Assign { value, .. } = &body_of_first_fn(&m).stmts[0].kind else {
            panic!()
        };
        // || is the root.
        assert!(matches!(
            value.kind,
            ExprKind::Binary {
                op: crate::lang::ast::BinaryOp::Or,
                ..
            }
        ));
    }

    #[test]
    fn statements_end_at_newlines_and_semicolons() {
        let m = parse_text("fn f() {\n let a = 1; let b = a +\n 2\n a += b\n}\n").unwrap();
        assert_eq!(body_of_first_fn(&m).stmts.len(), 3);
    }

    #[test]
    fn a_closing_brace_ends_its_block_statement() {
        let m = parse_text(
            "fn f(n: i64) -> bool { if n == 0 { return true } return g(n - 1) } fn g(n: i64) -> bool { while n > 0 { } for i in 0..n { } { } return false }",
        )
        .unwrap();
        assert_eq!(m.items.len(), 2);
        assert_eq!(body_of_first_fn(&m).stmts.len(), 2);
        let m = parse_text("class C { fn a(self) { } fn b(self) { } var x: i64 = 0 }").unwrap();
        assert_eq!(m.items.len(), 1);
        // A statement that does not end with a block still needs its end.
        assert!(parse_text("fn f() { let a = 1 let b = 2 }").is_err());
        assert!(parse_text("fn f() { let a = || { } let b = 2 }").is_err());
    }

    #[test]
    fn open_input_is_incomplete() {
        for text in [
            "fn f() {",
            "fn f() { let x = 1 +",
            "fn f(a: i64,",
            "let x = [1, 2",
        ] {
            let err = parse_text(text).unwrap_err();
            assert!(err.is_incomplete(), "{text}: {err}");
        }
        let err = parse_text("fn f() { let = 1 }").unwrap_err();
        assert!(!err.is_incomplete());
    }

    #[test]
    fn recovery_reports_each_broken_statement() {
        let err = parse_text("fn f() {\n let = 1\n x = = 2\n let y = 3\n}\n").unwrap_err();
        assert_eq!(err.0.len(), 2, "{err}");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = format!("let x = {}1{}", "(".repeat(500), ")".repeat(500));
        let err = parse_text(&text).unwrap_err();
        assert!(err.0[0].message.contains("too deep"));
    }
}
