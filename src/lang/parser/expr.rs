//! Expressions (precedence climbing) and types.

use super::{MAX_EXPR_DEPTH, PResult, Parser};
use crate::lang::ast::{BinaryOp, Expr, ExprKind, StrPart, TypeExpr, TypeKind, UnaryOp};
use crate::lang::diag::{DiagKind, Diagnostic};
use crate::lang::span::Span;
use crate::lang::token::{Keyword, Punct, TokenKind};

/// The deepest of an expression's direct subexpressions (0 for a leaf; a closure's body is
/// counted by [`Parser::closure`]).
fn children_nesting(kind: &ExprKind) -> u32 {
    let most = |es: &[Expr]| es.iter().map(|e| e.nesting).max().unwrap_or(0);
    match kind {
        ExprKind::Int(_)
        | ExprKind::Bits(_)
        | ExprKind::Float(_)
        | ExprKind::Bool(_)
        | ExprKind::Null
        | ExprKind::Name(_)
        | ExprKind::SelfValue
        | ExprKind::VecNew(_)
        | ExprKind::Closure { .. } => 0,
        ExprKind::Str(parts) => parts
            .iter()
            .map(|p| match p {
                StrPart::Text(_) => 0,
                StrPart::Interp(e) => e.nesting,
            })
            .max()
            .unwrap_or(0),
        ExprKind::Paren(e)
        | ExprKind::Unary { operand: e, .. }
        | ExprKind::Cast(e, _)
        | ExprKind::Is(e, _)
        | ExprKind::AsMaybe(e, _)
        | ExprKind::Field(e, _) => e.nesting,
        ExprKind::Binary { lhs, rhs, .. } => lhs.nesting.max(rhs.nesting),
        ExprKind::Index(a, b) | ExprKind::ArrayRepeat(a, b) => a.nesting.max(b.nesting),
        ExprKind::Call(callee, args) => callee.nesting.max(most(args)),
        ExprKind::MethodCall { receiver, args, .. } => receiver.nesting.max(most(args)),
        ExprKind::ArrayLit(items) | ExprKind::New(_, items) => most(items),
    }
}

/// The binary operator a token spells, if any.
fn binary_op(p: Punct) -> Option<BinaryOp> {
    Some(match p {
        Punct::Plus => BinaryOp::Add,
        Punct::Minus => BinaryOp::Sub,
        Punct::Star => BinaryOp::Mul,
        Punct::Slash => BinaryOp::Div,
        Punct::Percent => BinaryOp::Rem,
        Punct::Amp => BinaryOp::BitAnd,
        Punct::Pipe => BinaryOp::BitOr,
        Punct::Caret => BinaryOp::BitXor,
        Punct::Shl => BinaryOp::Shl,
        Punct::Shr => BinaryOp::Shr,
        Punct::UShr => BinaryOp::UShr,
        Punct::EqEq => BinaryOp::Eq,
        Punct::NotEq => BinaryOp::Ne,
        Punct::Lt => BinaryOp::Lt,
        Punct::Le => BinaryOp::Le,
        Punct::Gt => BinaryOp::Gt,
        Punct::Ge => BinaryOp::Ge,
        Punct::AndAnd => BinaryOp::And,
        Punct::OrOr => BinaryOp::Or,
        _ => return None,
    })
}

/// The operator of a compound assignment token (`+=` gives `+`).
pub(super) fn compound_op(p: Punct) -> Option<BinaryOp> {
    Some(match p {
        Punct::PlusEq => BinaryOp::Add,
        Punct::MinusEq => BinaryOp::Sub,
        Punct::StarEq => BinaryOp::Mul,
        Punct::SlashEq => BinaryOp::Div,
        Punct::PercentEq => BinaryOp::Rem,
        Punct::AmpEq => BinaryOp::BitAnd,
        Punct::PipeEq => BinaryOp::BitOr,
        Punct::CaretEq => BinaryOp::BitXor,
        Punct::ShlEq => BinaryOp::Shl,
        Punct::ShrEq => BinaryOp::Shr,
        Punct::UShrEq => BinaryOp::UShr,
        _ => return None,
    })
}

impl Parser<'_> {
    /// A node one level above its deepest subexpression (`body` levels more for a closure),
    /// or an error at `at` (the token that adds the level) past [`MAX_EXPR_DEPTH`].
    fn node(&mut self, kind: ExprKind, span: Span, at: Span, body: u32) -> PResult<Expr> {
        let nesting = children_nesting(&kind).max(body).saturating_add(1);
        let level = self.depth.saturating_add(nesting);
        if level > MAX_EXPR_DEPTH {
            return Err(Diagnostic::new(
                DiagKind::Syntax,
                at,
                format!("expression nested too deeply: more than {MAX_EXPR_DEPTH} levels"),
            )
            .with_note(
                "every operator of a chain, cast, call, index, field access and bracket is a \
                 level; split the expression with `let`: `let a = <first half>` then `a + ...`",
            ));
        }
        self.reach = self.reach.max(level);
        Ok(Expr {
            kind,
            span,
            nesting,
        })
    }

    /// A whole expression.
    pub(super) fn expr(&mut self) -> PResult<Expr> {
        self.nested(|p| p.binary(1))
    }

    fn binary(&mut self, min_prec: u8) -> PResult<Expr> {
        let mut lhs = self.cast()?;
        loop {
            let op = match self.kind() {
                TokenKind::Punct(p) => binary_op(*p),
                _ => None,
            };
            let Some(op) = op else { break };
            let prec = op.precedence();
            if prec < min_prec {
                break;
            }
            if op.is_comparison()
                && matches!(&lhs.kind, ExprKind::Binary { op: prev, .. } if prev.is_comparison())
            {
                return Err(Diagnostic::new(
                    DiagKind::Syntax,
                    self.span(),
                    "comparison operators cannot be chained",
                )
                .with_note("use `&&`: `a < b && b < c`"));
            }
            let op_span = self.bump().span;
            let rhs = self.nested(|p| p.binary(prec + 1))?;
            let span = lhs.span.to(rhs.span);
            let kind = ExprKind::Binary {
                op,
                op_span,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            };
            lhs = self.node(kind, span, op_span, 0)?;
        }
        Ok(lhs)
    }

    /// Prefix operators, then any number of `as T`, `as? D` and `is D` (`is` is a word only
    /// here: it stays free as a name).
    fn cast(&mut self) -> PResult<Expr> {
        let mut e = self.unary()?;
        loop {
            if self.is_kw(Keyword::As) {
                let at = self.bump().span;
                if self.eat_punct(Punct::Question) {
                    let class = self.ident("a class name after `as?`")?;
                    let span = e.span.to(class.span);
                    e = self.node(ExprKind::AsMaybe(Box::new(e), class), span, at, 0)?;
                    continue;
                }
                let ty = self.type_expr()?;
                let span = e.span.to(ty.span);
                e = self.node(ExprKind::Cast(Box::new(e), ty), span, at, 0)?;
            } else if matches!(self.kind(), TokenKind::Ident(w) if w == "is")
                && matches!(self.nth_kind(1), TokenKind::Ident(_))
            {
                let at = self.bump().span;
                let class = self.ident("a class name after `is`")?;
                let span = e.span.to(class.span);
                e = self.node(ExprKind::Is(Box::new(e), class), span, at, 0)?;
            } else {
                return Ok(e);
            }
        }
    }

    fn unary(&mut self) -> PResult<Expr> {
        let op = match self.kind() {
            TokenKind::Punct(Punct::Minus) => Some(UnaryOp::Neg),
            TokenKind::Punct(Punct::Bang) => Some(UnaryOp::Not),
            TokenKind::Punct(Punct::Tilde) => Some(UnaryOp::BitNot),
            _ => None,
        };
        let Some(op) = op else {
            return self.postfix();
        };
        let start = self.bump().span;
        let operand = self.nested(|p| p.unary())?;
        let span = start.to(operand.span);
        let kind = ExprKind::Unary {
            op,
            operand: Box::new(operand),
        };
        self.node(kind, span, start, 0)
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        loop {
            let at = self.span();
            if self.is_punct(Punct::LParen) {
                let args = self.args()?;
                let span = self.since(e.span);
                e = self.node(ExprKind::Call(Box::new(e), args), span, at, 0)?;
            } else if self.eat_punct(Punct::LBracket) {
                let index = self.expr()?;
                self.expect_punct(Punct::RBracket)?;
                let span = self.since(e.span);
                e = self.node(ExprKind::Index(Box::new(e), Box::new(index)), span, at, 0)?;
            } else if self.eat_punct(Punct::Dot) {
                let name = self.ident("a field or method name")?;
                let start = e.span;
                let kind = if self.is_punct(Punct::LParen) {
                    let args = self.args()?;
                    ExprKind::MethodCall {
                        receiver: Box::new(e),
                        method: name,
                        args,
                    }
                } else {
                    ExprKind::Field(Box::new(e), name)
                };
                let span = self.since(start);
                e = self.node(kind, span, at, 0)?;
            } else {
                return Ok(e);
            }
        }
    }

    /// `( a, b, c )` (the caller is at `(`).
    fn args(&mut self) -> PResult<Vec<Expr>> {
        self.expect_punct(Punct::LParen)?;
        let mut args = Vec::new();
        while !self.is_punct(Punct::RParen) {
            args.push(self.expr()?);
            if !self.eat_punct(Punct::Comma) {
                break;
            }
        }
        self.expect_punct(Punct::RParen)?;
        Ok(args)
    }

    fn primary(&mut self) -> PResult<Expr> {
        let start = self.span();
        let kind = match self.kind().clone() {
            TokenKind::Int(v) => {
                self.bump();
                ExprKind::Int(v)
            }
            TokenKind::Bits(v) => {
                self.bump();
                ExprKind::Bits(v)
            }
            TokenKind::Float(v) => {
                self.bump();
                ExprKind::Float(v)
            }
            TokenKind::Kw(Keyword::True) => {
                self.bump();
                ExprKind::Bool(true)
            }
            TokenKind::Kw(Keyword::False) => {
                self.bump();
                ExprKind::Bool(false)
            }
            TokenKind::Kw(Keyword::Null) => {
                self.bump();
                ExprKind::Null
            }
            TokenKind::Kw(Keyword::SelfValue) => {
                self.bump();
                ExprKind::SelfValue
            }
            TokenKind::StrStart => self.string()?,
            TokenKind::Ident(name) => {
                self.bump();
                if name == "vec" && self.is_punct(Punct::Lt) {
                    self.bump();
                    let elem = self.type_expr()?;
                    self.expect_gt()?;
                    self.expect_punct(Punct::LParen)?;
                    self.expect_punct(Punct::RParen)?;
                    ExprKind::VecNew(elem)
                } else {
                    ExprKind::Name(name)
                }
            }
            TokenKind::Punct(Punct::LParen) => {
                self.bump();
                let inner = self.expr()?;
                self.expect_punct(Punct::RParen)?;
                ExprKind::Paren(Box::new(inner))
            }
            TokenKind::Punct(Punct::LBracket) => self.array()?,
            TokenKind::Kw(Keyword::New) => {
                self.bump();
                let class = self.ident("a class name")?;
                let args = self.args()?;
                ExprKind::New(class, args)
            }
            TokenKind::Punct(Punct::Pipe | Punct::OrOr) => {
                let (kind, body) = self.closure()?;
                let span = self.since(start);
                return self.node(kind, span, start, body);
            }
            _ => return Err(self.unexpected("an expression")),
        };
        let span = self.since(start);
        self.node(kind, span, start, 0)
    }

    fn string(&mut self) -> PResult<ExprKind> {
        self.bump();
        let mut parts = Vec::new();
        loop {
            match self.kind().clone() {
                TokenKind::StrText(text) => {
                    self.bump();
                    parts.push(StrPart::Text(text));
                }
                TokenKind::InterpOpen => {
                    self.bump();
                    let e = self.expr()?;
                    if !matches!(self.kind(), TokenKind::InterpClose) {
                        return Err(self.unexpected("`}` to close `${`"));
                    }
                    self.bump();
                    parts.push(StrPart::Interp(e));
                }
                TokenKind::StrEnd => {
                    self.bump();
                    return Ok(ExprKind::Str(parts));
                }
                _ => return Err(self.unexpected("the end of the string")),
            }
        }
    }

    /// `[a, b]`, `[]` or `[e; n]` (the caller is at `[`).
    fn array(&mut self) -> PResult<ExprKind> {
        self.bump();
        if self.eat_punct(Punct::RBracket) {
            return Ok(ExprKind::ArrayLit(Vec::new()));
        }
        let first = self.expr()?;
        if self.eat_punct(Punct::Semi) {
            let count = self.expr()?;
            self.expect_punct(Punct::RBracket)?;
            return Ok(ExprKind::ArrayRepeat(Box::new(first), Box::new(count)));
        }
        let mut items = vec![first];
        while self.eat_punct(Punct::Comma) {
            if self.is_punct(Punct::RBracket) {
                break;
            }
            items.push(self.expr()?);
        }
        self.expect_punct(Punct::RBracket)?;
        Ok(ExprKind::ArrayLit(items))
    }

    /// `|a: T, b: U| -> R { body }` or `|| { body }`, with how many levels its body goes
    /// below the closure (its blocks, statements and their expressions).
    fn closure(&mut self) -> PResult<(ExprKind, u32)> {
        let mut params = Vec::new();
        if !self.eat_punct(Punct::OrOr) {
            self.bump();
            while !self.is_punct(Punct::Pipe) {
                params.push(self.param()?);
                if !self.eat_punct(Punct::Comma) {
                    break;
                }
            }
            self.expect_punct(Punct::Pipe)?;
        }
        let ret = if self.eat_punct(Punct::Arrow) {
            Some(self.type_expr()?)
        } else {
            None
        };
        let outer = std::mem::replace(&mut self.reach, self.depth);
        let body = self.block();
        let levels = self.reach - self.depth;
        self.reach = self.reach.max(outer);
        let body = body?;
        Ok((ExprKind::Closure { params, ret, body }, levels))
    }

    /// The `>` closing `vec<T`, also as a part of `>>` or `>>>`.
    fn expect_gt(&mut self) -> PResult<()> {
        let width = match self.kind() {
            TokenKind::Punct(Punct::Shr) => 2,
            TokenKind::Punct(Punct::UShr) => 3,
            _ => return self.expect_punct(Punct::Gt).map(|_| ()),
        };
        self.gt_taken += 1;
        if self.gt_taken == width {
            self.gt_taken = 0;
            self.bump();
        }
        Ok(())
    }

    /// A written type.
    pub(super) fn type_expr(&mut self) -> PResult<TypeExpr> {
        self.nested(|p| p.type_inner())
    }

    fn type_inner(&mut self) -> PResult<TypeExpr> {
        let start = self.span();
        let mut ty = match self.kind().clone() {
            TokenKind::Ident(name) => {
                self.bump();
                if name == "vec" && self.eat_punct(Punct::Lt) {
                    let elem = self.type_expr()?;
                    self.expect_gt()?;
                    TypeKind::Vec(Box::new(elem))
                } else {
                    TypeKind::Named(name)
                }
            }
            TokenKind::Punct(Punct::LBracket) => {
                self.bump();
                let elem = self.type_expr()?;
                self.expect_punct(Punct::Semi)?;
                let len = match self.kind() {
                    TokenKind::Int(n) => *n,
                    _ => return Err(self.unexpected("the array length (an integer literal)")),
                };
                self.bump();
                self.expect_punct(Punct::RBracket)?;
                TypeKind::Array(Box::new(elem), len)
            }
            TokenKind::Kw(Keyword::Fn) => {
                self.bump();
                self.expect_punct(Punct::LParen)?;
                let mut params = Vec::new();
                while !self.is_punct(Punct::RParen) {
                    params.push(self.type_expr()?);
                    if !self.eat_punct(Punct::Comma) {
                        break;
                    }
                }
                self.expect_punct(Punct::RParen)?;
                let ret = if self.eat_punct(Punct::Arrow) {
                    Some(Box::new(self.type_expr()?))
                } else {
                    None
                };
                TypeKind::Fn(params, ret)
            }
            _ => return Err(self.unexpected("a type")),
        };
        while self.is_punct(Punct::Question) {
            self.bump();
            ty = TypeKind::Nullable(Box::new(TypeExpr {
                kind: ty,
                span: self.since(start),
            }));
        }
        Ok(TypeExpr {
            kind: ty,
            span: self.since(start),
        })
    }
}
