//! Checking that the function has the shape of a collective program:
//! `fn NAME(p: &mut Program<'_, Simple | LL>) -> Result<(), ProgramError>`.

use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, GenericParam, ItemFn, PathArguments, ReturnType, Type};

use crate::meta::ProtocolName;

/// What the macro needs from a well-formed signature.
pub struct Checked {
    /// The protocol marker type, as written (`Simple`, `LL`, or a path or alias to one of them).
    pub protocol_type: Type,
    /// The protocol, when the marker's name says which one it is.
    pub protocol: Option<ProtocolName>,
}

const SHAPE: &str = "fn NAME(p: &mut Program<'_, Simple>) -> Result<(), ProgramError>";

/// Checks the signature; every error points at the part that is wrong.
pub fn check(f: &ItemFn) -> syn::Result<Checked> {
    let sig = &f.sig;
    if let Some(c) = &sig.constness {
        return Err(syn::Error::new(c.span(), "a collective program cannot be a `const fn`"));
    }
    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new(
            a.span(),
            "a collective program cannot be `async`: it builds a plan synchronously",
        ));
    }
    if let Some(u) = &sig.unsafety {
        return Err(syn::Error::new(u.span(), "a collective program cannot be `unsafe`"));
    }
    if let Some(abi) = &sig.abi {
        return Err(syn::Error::new(abi.span(), "a collective program cannot have an `extern` ABI"));
    }
    if let Some(v) = &sig.variadic {
        return Err(syn::Error::new(v.span(), "a collective program cannot be variadic"));
    }
    for p in &sig.generics.params {
        if !matches!(p, GenericParam::Lifetime(_)) {
            return Err(syn::Error::new(
                p.span(),
                "a collective program cannot have type or const parameters: the registry must be able to call it as is",
            ));
        }
    }
    if let Some(w) = &sig.generics.where_clause {
        return Err(syn::Error::new(w.span(), "a collective program cannot have a `where` clause"));
    }
    let mut inputs = sig.inputs.iter();
    let arg = match (inputs.next(), inputs.next()) {
        (None, _) => {
            return Err(syn::Error::new(
                sig.paren_token.span.join(),
                format!("a collective program takes exactly one argument, the program being built: `{SHAPE}`"),
            ));
        }
        (Some(_), Some(extra)) => {
            return Err(syn::Error::new(
                extra.span(),
                format!(
                    "a collective program takes exactly one argument, the program being built: `{SHAPE}`; remove this one"
                ),
            ));
        }
        (Some(a), None) => a,
    };
    let ty = match arg {
        FnArg::Receiver(r) => {
            return Err(syn::Error::new(
                r.span(),
                "a collective program is a free function, not a method: take `p: &mut Program<'_, Simple>` instead of `self`",
            ));
        }
        FnArg::Typed(t) => &*t.ty,
    };
    let (protocol_type, protocol) = program_protocol(ty)?;
    match &sig.output {
        ReturnType::Default => {
            return Err(syn::Error::new(
                sig.paren_token.span.close(),
                "a collective program returns `Result<(), ProgramError>`: add `-> Result<(), ProgramError>`",
            ));
        }
        // The full type is checked by the compiler through the generated builder; catch the obvious mistakes here.
        ReturnType::Type(_, ty) => {
            let is_result =
                matches!(&**ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Result"));
            if !is_result {
                return Err(syn::Error::new(
                    ty.span(),
                    "a collective program returns `Result<(), ProgramError>`; report failures with `Err(ProgramError::custom(..))`",
                ));
            }
        }
    }
    Ok(Checked { protocol_type, protocol })
}

/// Finds `P` in `&mut Program<'_, P>`.
fn program_protocol(ty: &Type) -> syn::Result<(Type, Option<ProtocolName>)> {
    let wrong = |span: proc_macro2::Span| {
        syn::Error::new(
            span,
            format!(
                "the argument of a collective program must be `&mut Program<'_, Simple>` or `&mut Program<'_, LL>`: `{SHAPE}`"
            ),
        )
    };
    let r = match ty {
        Type::Reference(r) => r,
        Type::Paren(p) => return program_protocol(&p.elem),
        Type::Group(g) => return program_protocol(&g.elem),
        _ => return Err(wrong(ty.span())),
    };
    if r.mutability.is_none() {
        return Err(syn::Error::new(
            r.and_token.span,
            "the program must be borrowed mutably: write `&mut Program<'_, ...>`",
        ));
    }
    let path = match &*r.elem {
        Type::Path(p) if p.qself.is_none() => &p.path,
        other => return Err(wrong(other.span())),
    };
    let last = path.segments.last().ok_or_else(|| wrong(path.span()))?;
    if last.ident != "Program" {
        return Err(wrong(r.elem.span()));
    }
    let args = match &last.arguments {
        PathArguments::AngleBracketed(a) => a,
        _ => {
            return Err(syn::Error::new(last.span(), "name the protocol: `Program<'_, Simple>` or `Program<'_, LL>`"));
        }
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    let p = match (types.next(), types.next()) {
        (Some(t), None) => t.clone(),
        _ => {
            return Err(syn::Error::new(
                args.span(),
                "`Program` takes one protocol type: `Program<'_, Simple>` or `Program<'_, LL>`",
            ));
        }
    };
    let protocol = match &p {
        Type::Path(tp) => tp.path.segments.last().and_then(|s| match s.ident.to_string().as_str() {
            "Simple" => Some(ProtocolName::Simple),
            "LL" | "Ll" => Some(ProtocolName::Ll),
            "LL128" | "Ll128" => Some(ProtocolName::Ll128),
            _ => None,
        }),
        _ => None,
    };
    Ok((p, protocol))
}
