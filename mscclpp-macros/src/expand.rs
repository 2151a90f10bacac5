//! Code generation: the function unchanged, and beside it a builder and a registry entry.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ItemFn, Lit, Meta as AttrMeta};

use crate::eval::Bounds;
use crate::meta::{self, BufferMode, RanksPerNode};
use crate::signature;

/// Expands the attribute. On error: the spanned `compile_error!` followed by the unmodified item, so that the
/// function still exists for the IDE and for the rest of the crate.
pub fn collective_program(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr, item.clone()) {
        Ok(tokens) => tokens,
        Err(e) => {
            let err = e.to_compile_error();
            quote!(#err #item)
        }
    }
}

fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let f: ItemFn = syn::parse2(item.clone()).map_err(|e| {
        syn::Error::new(
            e.span(),
            "#[collective_program] goes on a free function `fn NAME(p: &mut Program<'_, Simple>) -> Result<(), ProgramError>`",
        )
    })?;
    // Check the signature first: it is what the user most likely got wrong, and its errors point into the code.
    let sig = signature::check(&f)?;
    let m = meta::parse(attr)?;
    if let (Some((declared, span)), Some(found)) = (m.protocol, sig.protocol)
        && declared != found
    {
        return Err(syn::Error::new(
            span,
            format!(
                "`protocol = \"{}\"` disagrees with the signature, which takes `Program<'_, {}>`; drop the key (the signature decides) or change one of them",
                declared.as_str(),
                found.marker()
            ),
        ));
    }

    let ident = &f.sig.ident;
    let name = m.name.as_ref().map(|s| s.value()).unwrap_or_else(|| ident.to_string());
    let p = &sig.protocol_type;
    let lang = lang_path();
    let collective = syn::Ident::new(m.collective.map(|c| c.0).unwrap_or("Custom"), Span::call_site());
    let world = bounds(m.world_sizes.unwrap_or(Bounds { lo: 1, hi: None }));
    let rpn = match m.ranks_per_node {
        RanksPerNode::World => quote!(#lang::registry::RanksPerNode::World),
        RanksPerNode::Range(b) => {
            let b = bounds(b);
            quote!(#lang::registry::RanksPerNode::Range(#b))
        }
        RanksPerNode::Nodes(n) => quote!(#lang::registry::RanksPerNode::Nodes(#n)),
    };
    let messages = bounds(m.message_sizes);
    let mode = match m.buffer_mode {
        BufferMode::InPlace => quote!(InPlace),
        BufferMode::OutOfPlace => quote!(OutOfPlace),
        BufferMode::Both => quote!(Both),
    };
    let tags = m.tags.iter().map(|(k, v)| quote!(#lang::registry::Tag { key: #k, value: #v }));
    let description = m.description.clone().unwrap_or_else(|| doc_summary(&f));
    let thread_blocks = m.thread_blocks.iter().map(|(size, blocks, _)| {
        let blocks = *blocks as usize;
        quote!((#size, #blocks))
    });
    let threads_per_block = m.thread_blocks.iter().map(|(size, _, threads)| quote!((#size, #threads)));
    let source = quote!(#f).to_string();

    // A protocol key next to a marker the macro cannot read (an alias): let the compiler compare them.
    let protocol_assert = match (m.protocol, sig.protocol) {
        (Some((declared, span)), None) => {
            let variant = match declared {
                meta::ProtocolName::Simple => quote!(Simple),
                meta::ProtocolName::Ll => quote!(Ll),
                meta::ProtocolName::Ll128 => quote!(Ll128),
            };
            let msg = format!("`protocol = \"{}\"` disagrees with the signature's protocol type", declared.as_str());
            quote_spanned! {span=>
                const _: () = ::core::assert!(
                    ::core::matches!(<#p as #lang::program::ProtocolKind>::PROTOCOL, #lang::plan::Protocol::#variant),
                    #msg
                );
            }
        }
        _ => quote!(),
    };

    // Spanned at the signature so that a wrong return type is reported there.
    let call = quote_spanned! {f.sig.span()=>
        #lang::program::build_plan::<#p>(spec, #ident)
    };

    // A test beside the function that builds every declared world size and verifies the plans (in the crate's own
    // `cargo test`; `check = false` leaves it out).
    let check = if m.check {
        let test = quote::format_ident!("__collective_program_check_{}", ident);
        quote! {
            #[cfg(test)]
            #[test]
            #[doc(hidden)]
            #[allow(non_snake_case)]
            fn #test() {
                match #lang::registry::check_program(#name) {
                    ::core::result::Result::Ok(report) => ::core::assert!(report.ok(), "{}", report),
                    ::core::result::Result::Err(e) => ::core::panic!("{}", e),
                }
            }
        }
    } else {
        quote!()
    };

    Ok(quote! {
        #f

        #check

        #[doc(hidden)]
        const _: () = {
            #protocol_assert

            fn __mscclpp_build(
                spec: &#lang::program::ProgramSpec,
            ) -> ::core::result::Result<#lang::plan::Plan, #lang::program::ProgramError> {
                #call
            }

            #lang::__private::inventory::submit! {
                #lang::registry::Registration(#lang::registry::ProgramMeta {
                    name: #name,
                    function: ::core::concat!(::core::module_path!(), "::", ::core::stringify!(#ident)),
                    collective: #lang::plan::Collective::#collective,
                    protocol: <#p as #lang::program::ProtocolKind>::PROTOCOL,
                    world_sizes: #world,
                    ranks_per_node: #rpn,
                    message_sizes: #messages,
                    buffer_mode: #lang::registry::BufferMode::#mode,
                    tags: &[#(#tags),*],
                    thread_blocks: &[#(#thread_blocks),*],
                    threads_per_block: &[#(#threads_per_block),*],
                    description: #description,
                    source: #source,
                    crate_name: match ::core::option_env!("CARGO_CRATE_NAME") {
                        ::core::option::Option::Some(n) => n,
                        ::core::option::Option::None => "",
                    },
                    crate_version: match ::core::option_env!("CARGO_PKG_VERSION") {
                        ::core::option::Option::Some(v) => v,
                        ::core::option::Option::None => "",
                    },
                    sources: match ::core::option_env!("MSCCLPP_PROGRAM_SOURCES") {
                        ::core::option::Option::Some(h) => h,
                        ::core::option::Option::None => "",
                    },
                    file: ::core::file!(),
                    line: ::core::line!(),
                    build: __mscclpp_build,
                })
            }
        };
    })
}

fn bounds(b: Bounds) -> TokenStream {
    let lo = b.lo;
    let hi = b.hi.unwrap_or(u64::MAX);
    let lang = lang_path();
    quote!(#lang::registry::SizeRange { min: #lo, max: #hi })
}

/// The first paragraph of the function's doc comment, on one line.
fn doc_summary(f: &ItemFn) -> String {
    let mut lines = Vec::new();
    for attr in &f.attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        let AttrMeta::NameValue(nv) = &attr.meta else { continue };
        let Expr::Lit(lit) = &nv.value else { continue };
        let Lit::Str(s) = &lit.lit else { continue };
        let line = s.value().trim().to_string();
        if line.is_empty() {
            if lines.is_empty() {
                continue;
            }
            break;
        }
        lines.push(line);
    }
    lines.join(" ")
}

/// The path of `mscclpp_lang` as the calling crate sees it: `::mscclpp_lang` when it depends on `mscclpp-lang`
/// (or is it), `::mscclpp::lang` when it depends only on the `mscclpp` facade.
fn lang_path() -> TokenStream {
    use proc_macro_crate::{FoundCrate, crate_name};
    match crate_name("mscclpp-lang") {
        Ok(FoundCrate::Name(n)) => {
            let id = syn::Ident::new(&n, Span::call_site());
            quote!(::#id)
        }
        Ok(FoundCrate::Itself) => quote!(::mscclpp_lang),
        Err(_) => match crate_name("mscclpp") {
            Ok(FoundCrate::Name(n)) => {
                let id = syn::Ident::new(&n, Span::call_site());
                quote!(::#id::lang)
            }
            Ok(FoundCrate::Itself) => quote!(::mscclpp::lang),
            Err(_) => quote!(::mscclpp_lang),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(attr: TokenStream, item: TokenStream) -> String {
        collective_program(attr, item).to_string()
    }

    #[test]
    fn keeps_the_function_and_registers_it() {
        let out = expand_str(
            quote!(collective = "allgather", world_sizes = 2..=8, tags(default = 1)),
            quote!(
                /// Gathers.
                ///
                /// More text.
                pub fn ag(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
                    Ok(())
                }
            ),
        );
        assert!(out.contains("pub fn ag"), "{out}");
        assert!(out.contains("inventory :: submit"), "{out}");
        assert!(out.contains("description : \"Gathers.\""), "{out}");
        assert!(out.contains("name : \"ag\""), "{out}");
        assert!(!out.contains("compile_error"), "{out}");
    }

    #[test]
    fn errors_keep_the_item() {
        let out = expand_str(
            quote!(collective = "allgather", world_sizes = 2..=8),
            quote!(
                fn ag(p: &mut Program<'_, Simple>, q: u32) -> Result<(), ProgramError> {
                    Ok(())
                }
            ),
        );
        assert!(out.contains("compile_error"), "{out}");
        assert!(out.contains("fn ag"), "{out}");
        assert!(!out.contains("submit"), "{out}");
    }

    #[test]
    fn protocol_must_agree() {
        let out = expand_str(
            quote!(collective = "allgather", world_sizes = 2, protocol = "LL"),
            quote!(
                fn ag(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
                    Ok(())
                }
            ),
        );
        assert!(out.contains("disagrees with the signature"), "{out}");
    }

    #[test]
    fn signature_errors() {
        let cases = [
            (
                quote!(
                    fn f() -> Result<(), ProgramError> {
                        Ok(())
                    }
                ),
                "exactly one argument",
            ),
            (
                quote!(
                    fn f(p: &Program<'_, Simple>) -> Result<(), ProgramError> {
                        Ok(())
                    }
                ),
                "borrowed mutably",
            ),
            (
                quote!(
                    fn f(p: &mut Vec<u8>) -> Result<(), ProgramError> {
                        Ok(())
                    }
                ),
                "must be `&mut Program",
            ),
            (
                quote!(
                    fn f(p: &mut Program<'_, Simple>) {}
                ),
                "returns `Result",
            ),
            (
                quote!(
                    async fn f(p: &mut Program<'_, Simple>) -> Result<(), ProgramError> {
                        Ok(())
                    }
                ),
                "async",
            ),
            (
                quote!(
                    fn f<T>(p: &mut Program<'_, T>) -> Result<(), ProgramError> {
                        Ok(())
                    }
                ),
                "type or const",
            ),
        ];
        for (item, want) in cases {
            let out = expand_str(quote!(collective = "allgather", world_sizes = 2), item);
            assert!(out.contains(want), "{want}: {out}");
        }
    }
}
