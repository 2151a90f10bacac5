//! Compile-time evaluation of the integer expressions and ranges the attribute accepts.

use syn::spanned::Spanned;
use syn::{BinOp, Expr, ExprLit, Lit, RangeLimits, UnOp};

/// An inclusive range `lo..=hi`; `hi == None` means unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub lo: u64,
    pub hi: Option<u64>,
}

/// Evaluates an unsigned integer expression made of literals, `+ - * / <<` and parentheses.
pub fn eval_u64(expr: &Expr) -> syn::Result<u64> {
    let overflow = |e: &Expr| syn::Error::new(e.span(), "this value does not fit in a u64");
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) => i.base10_parse::<u64>(),
        Expr::Paren(p) => eval_u64(&p.expr),
        Expr::Group(g) => eval_u64(&g.expr),
        Expr::Binary(b) => {
            let l = eval_u64(&b.left)?;
            let r = eval_u64(&b.right)?;
            let v = match b.op {
                BinOp::Add(_) => l.checked_add(r),
                BinOp::Sub(_) => l.checked_sub(r),
                BinOp::Mul(_) => l.checked_mul(r),
                BinOp::Div(_) => l.checked_div(r),
                BinOp::Shl(_) => u32::try_from(r).ok().and_then(|r| l.checked_shl(r)).filter(|v| v >> r == l),
                _ => {
                    return Err(syn::Error::new(
                        b.op.span(),
                        "only `+`, `-`, `*`, `/` and `<<` are allowed in metadata values",
                    ));
                }
            };
            v.ok_or_else(|| overflow(expr))
        }
        _ => Err(syn::Error::new(
            expr.span(),
            "expected an integer literal or integer arithmetic such as `64 * 1024` or `1 << 20`",
        )),
    }
}

/// Evaluates a signed integer (a tag value).
pub fn eval_i64(expr: &Expr) -> syn::Result<i64> {
    match expr {
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => {
            let v = eval_u64(&u.expr)?;
            if v > i64::MAX as u64 + 1 {
                return Err(syn::Error::new(expr.span(), "this value does not fit in an i64"));
            }
            Ok((v as i128).wrapping_neg() as i64)
        }
        _ => {
            let v = eval_u64(expr)?;
            i64::try_from(v).map_err(|_| syn::Error::new(expr.span(), "this value does not fit in an i64"))
        }
    }
}

/// Evaluates `N`, `A..=B`, `A..B` or `A..` into inclusive bounds; `what` names the key in errors.
pub fn eval_range(expr: &Expr, what: &str) -> syn::Result<Bounds> {
    match expr {
        Expr::Range(r) => {
            let lo = match &r.start {
                Some(s) => eval_u64(s)?,
                None => 0,
            };
            let hi = match (&r.end, &r.limits) {
                (None, RangeLimits::HalfOpen(_)) => None,
                (None, RangeLimits::Closed(_)) => {
                    return Err(syn::Error::new(expr.span(), format!("`{what}` needs an upper bound after `..=`")));
                }
                (Some(e), RangeLimits::Closed(_)) => Some(eval_u64(e)?),
                (Some(e), RangeLimits::HalfOpen(_)) => {
                    let end = eval_u64(e)?;
                    if end == 0 {
                        return Err(syn::Error::new(expr.span(), format!("`{what}` is an empty range")));
                    }
                    Some(end - 1)
                }
            };
            if let Some(hi) = hi
                && hi < lo
            {
                return Err(syn::Error::new(
                    expr.span(),
                    format!("`{what}` is an empty range: the lower bound {lo} is above the upper bound {hi}"),
                ));
            }
            Ok(Bounds { lo, hi })
        }
        Expr::Paren(p) => eval_range(&p.expr, what),
        _ => {
            let v = eval_u64(expr).map_err(|e| {
                syn::Error::new(
                    e.span(),
                    format!("`{what}` expects a number or a range such as `2..=8`, `2..9` or `2..`; {e}"),
                )
            })?;
            Ok(Bounds { lo: v, hi: Some(v) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> Expr {
        syn::parse_str(s).unwrap()
    }

    #[test]
    fn arithmetic() {
        assert_eq!(eval_u64(&e("64 * 1024")).unwrap(), 65536);
        assert_eq!(eval_u64(&e("1 << 20")).unwrap(), 1 << 20);
        assert_eq!(eval_u64(&e("(2 + 2) * 1_000")).unwrap(), 4000);
        assert!(eval_u64(&e("1 << 64")).is_err());
        assert!(eval_u64(&e("18446744073709551615 + 1")).is_err());
        assert!(eval_u64(&e("x")).is_err());
        assert_eq!(eval_i64(&e("-3")).unwrap(), -3);
    }

    #[test]
    fn ranges() {
        assert_eq!(eval_range(&e("2..=8"), "w").unwrap(), Bounds { lo: 2, hi: Some(8) });
        assert_eq!(eval_range(&e("2..9"), "w").unwrap(), Bounds { lo: 2, hi: Some(8) });
        assert_eq!(eval_range(&e("2.."), "w").unwrap(), Bounds { lo: 2, hi: None });
        assert_eq!(eval_range(&e("4"), "w").unwrap(), Bounds { lo: 4, hi: Some(4) });
        assert!(eval_range(&e("8..=2"), "w").is_err());
        assert!(eval_range(&e("0..0"), "w").is_err());
    }
}
