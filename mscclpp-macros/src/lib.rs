//! The `#[collective_program]` attribute.
use proc_macro::TokenStream;

/// Marks a function as a collective program and registers it.
#[proc_macro_attribute]
pub fn collective_program(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}
