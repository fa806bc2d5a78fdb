//! `#[derive(State)]` for graphkit: generates a state's update type, its builder and the
//! merge code. Use it through `graphkit::State`; see that trait for the attributes.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, Ident, Path, Type, parse_macro_input, spanned::Spanned};

/// Derives `graphkit::State` for a struct with named fields.
///
/// Field attributes pick the reducer: none (last value), `#[reducer(append)]`,
/// `#[reducer(merge_by_key)]`, `#[reducer(merge_by = key_fn)]` (a function
/// `fn(&T) -> Option<K>` on the items of a `Vec<T>` or `MergeByVec<T, K>`; both merge
/// reducers take `max = N` after a comma to keep the last `N` items of a list),
/// `#[reducer(capped(max = N, fold =
/// fold_fn))]` (a function `fn(Option<T>, Vec<T>) -> T`), `#[reducer(add)]`,
/// `#[reducer(with = path)]` (a function `fn(&mut T, T)`) or
/// `#[reducer(with = path, update = U)]` (a function `fn(&mut T, U)`).
/// The update type is `<Name>Update` unless `#[state(update = OtherName)]` says otherwise.
#[proc_macro_derive(State, attributes(reducer, state))]
pub fn derive_state(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

enum Kind {
    LastValue,
    Append,
    MergeByKey,
    MergeBy {
        key: Box<Path>,
    },
    Capped {
        max: Box<syn::Expr>,
        fold: Box<Path>,
    },
    Add,
    Custom {
        func: Box<Path>,
        update: Option<Box<Type>>,
    },
}

struct FieldSpec {
    ident: Ident,
    ty: Type,
    kind: Kind,
    /// `max = N` of a merge-by-key list: keep its last `N` items.
    max: Option<syn::Expr>,
}

fn parse_kind(field: &syn::Field) -> syn::Result<(Kind, Option<syn::Expr>)> {
    let mut kind = Kind::LastValue;
    let mut max = None;
    let mut seen = false;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("reducer")) {
        if seen {
            return Err(syn::Error::new(
                attr.span(),
                "a field takes one #[reducer(...)]",
            ));
        }
        seen = true;
        let mut func = None;
        let mut update = None;
        attr.parse_nested_meta(|meta| {
            let name = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
            match name.as_str() {
                "last_value" => kind = Kind::LastValue,
                "append" => kind = Kind::Append,
                "merge_by_key" => kind = Kind::MergeByKey,
                "add" => kind = Kind::Add,
                "merge_by" => {
                    kind = Kind::MergeBy {
                        key: Box::new(meta.value()?.parse::<Path>()?),
                    }
                }
                "capped" => kind = parse_capped(&meta)?,
                "max" => max = Some(meta.value()?.parse::<syn::Expr>()?),
                "with" => func = Some(meta.value()?.parse::<Path>()?),
                "update" => update = Some(meta.value()?.parse::<Type>()?),
                _ => {
                    return Err(meta.error(
                        "unknown reducer; use last_value, append, merge_by_key, merge_by = path, capped(max = N, fold = path), add, or with = path",
                    ));
                }
            }
            Ok(())
        })?;
        match (func, update) {
            (Some(func), update) => {
                kind = Kind::Custom {
                    func: Box::new(func),
                    update: update.map(Box::new),
                }
            }
            (None, Some(_)) => {
                return Err(syn::Error::new(
                    attr.span(),
                    "`update = Type` needs `with = path`",
                ));
            }
            (None, None) => {}
        }
        if max.is_some() && !matches!(kind, Kind::MergeByKey | Kind::MergeBy { .. }) {
            return Err(syn::Error::new(
                attr.span(),
                "`max = N` caps a merged list: use it with merge_by_key or merge_by = path (a capped append list is capped(max = N, fold = path))",
            ));
        }
    }
    Ok((kind, max))
}

/// `capped(max = N, fold = path)`: both are required.
fn parse_capped(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<Kind> {
    let mut max = None;
    let mut fold = None;
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("max") {
            max = Some(inner.value()?.parse::<syn::Expr>()?);
        } else if inner.path.is_ident("fold") {
            fold = Some(inner.value()?.parse::<Path>()?);
        } else {
            return Err(inner.error("unknown capped option; use max = N and fold = path"));
        }
        Ok(())
    })?;
    match (max, fold) {
        (Some(max), Some(fold)) => Ok(Kind::Capped {
            max: Box::new(max),
            fold: Box::new(fold),
        }),
        _ => Err(meta.error(
            "capped needs both options: capped(max = N, fold = path), where path is a function fn(Option<T>, Vec<T>) -> T",
        )),
    }
}

fn is_string(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "String" && s.arguments.is_empty()))
}

/// The builder method of a list field: several calls on one update combine in order.
fn combining_builder(ident: &Ident, fname: &str, uty: &Tokens) -> Tokens {
    quote! {
        #[doc = concat!("Adds an update of `", #fname, "`; several calls combine in order.")]
        #[must_use]
        pub fn #ident(mut self, update: impl Into<#uty>) -> Self {
            let update = update.into();
            self.#ident = Some(match self.#ident.take() {
                Some(previous) => previous.then(update),
                None => update,
            });
            self
        }
    }
}

fn update_name(input: &DeriveInput) -> syn::Result<Ident> {
    let mut name = format_ident!("{}Update", input.ident);
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("state")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("update") {
                name = meta.value()?.parse::<Ident>()?;
                Ok(())
            } else {
                Err(meta.error("unknown state option; the only one is `update = Name`"))
            }
        })?;
    }
    Ok(name)
}

fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "#[derive(State)] does not support generic structs yet; use concrete field types",
        ));
    }
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new(
            input.span(),
            "#[derive(State)] works on structs only",
        ));
    };
    let Fields::Named(named) = &data.fields else {
        return Err(syn::Error::new(
            input.span(),
            "#[derive(State)] needs named fields",
        ));
    };
    let fields = named
        .named
        .iter()
        .map(|f| {
            let (kind, max) = parse_kind(f)?;
            Ok(FieldSpec {
                ident: f
                    .ident
                    .clone()
                    .ok_or_else(|| syn::Error::new(f.span(), "unnamed field"))?,
                ty: f.ty.clone(),
                kind,
                max,
            })
        })
        .collect::<syn::Result<Vec<_>>>()?;

    let gk = quote!(::graphkit);
    let name = &input.ident;
    let vis = &input.vis;
    let update = update_name(input)?;

    let update_ty = |f: &FieldSpec| -> Tokens {
        let ty = &f.ty;
        match &f.kind {
            Kind::LastValue | Kind::Add => quote!(#ty),
            Kind::Append => quote!(<#gk::reducers::Append as #gk::reducers::Reducer<#ty>>::Update),
            Kind::MergeByKey => {
                quote!(<#gk::reducers::MergeByKey as #gk::reducers::Reducer<#ty>>::Update)
            }
            Kind::MergeBy { .. } | Kind::Capped { .. } => {
                quote!(#gk::reducers::AppendUpdate<<#ty as #gk::__private::ListField>::Item>)
            }
            Kind::Custom {
                update: Some(u), ..
            } => quote!(#u),
            Kind::Custom { update: None, .. } => quote!(#ty),
        }
    };

    let mut update_fields = Vec::new();
    let mut builders = Vec::new();
    let mut applies = Vec::new();
    let mut field_infos = Vec::new();
    let mut from_state = Vec::new();
    let mut from_state_possible = true;

    for (index, f) in fields.iter().enumerate() {
        let ident = &f.ident;
        let ty = &f.ty;
        let uty = update_ty(f);
        let fname = ident.to_string();
        let field_doc = format!("Update for field `{fname}`; `None` leaves it untouched.");
        update_fields.push(quote! {
            #[doc = #field_doc]
            #[serde(skip_serializing_if = "Option::is_none")]
            pub #ident: Option<#uty>,
        });
        let keep_last = f
            .max
            .as_ref()
            .map(|max| quote!(#gk::__private::KeepLast::keep_last(&mut self.#ident, #max);));
        let (kind_tokens, builder, apply) = match &f.kind {
            Kind::LastValue => (
                quote!(LastValue),
                // `String` fields take `&str` too; other types are taken as they are, so
                // integer literals infer the field's type.
                if is_string(ty) {
                    quote! {
                        #[doc = concat!("Sets `", #fname, "`.")]
                        #[must_use]
                        pub fn #ident(mut self, value: impl Into<#ty>) -> Self {
                            self.#ident = Some(value.into());
                            self
                        }
                    }
                } else {
                    quote! {
                        #[doc = concat!("Sets `", #fname, "`.")]
                        #[must_use]
                        pub fn #ident(mut self, value: #ty) -> Self {
                            self.#ident = Some(value);
                            self
                        }
                    }
                },
                quote! {
                    if let Some(value) = update.#ident {
                        writes.claim(#index, #fname)?;
                        self.#ident = value;
                    }
                },
            ),
            Kind::Append | Kind::MergeByKey => {
                let (tag, reducer) = match f.kind {
                    Kind::Append => (quote!(Append), quote!(#gk::reducers::Append)),
                    _ => (quote!(MergeByKey), quote!(#gk::reducers::MergeByKey)),
                };
                (
                    tag,
                    combining_builder(ident, &fname, &uty),
                    quote! {
                        if let Some(value) = update.#ident {
                            <#reducer as #gk::reducers::Reducer<#ty>>::reduce_in_step(
                                &mut self.#ident,
                                value,
                                writes.field(#index, #fname),
                            )?;
                            #keep_last
                        }
                    },
                )
            }
            Kind::MergeBy { key } => (
                quote!(MergeBy),
                combining_builder(ident, &fname, &uty),
                quote! {
                    if let Some(value) = update.#ident {
                        if writes.field(#index, #fname).admit(value.clear)? {
                            #gk::__private::MergeByField::merge_by_key_fn(&mut self.#ident, value, #key);
                            #keep_last
                        }
                    }
                },
            ),
            Kind::Capped { max, fold } => (
                quote!(Capped),
                combining_builder(ident, &fname, &uty),
                quote! {
                    if let Some(value) = update.#ident {
                        if writes.field(#index, #fname).admit(value.clear)? {
                            #gk::reducers::append_capped(&mut self.#ident, value, #max, #fold);
                        }
                    }
                },
            ),
            Kind::Add => (
                quote!(Add),
                quote! {
                    #[doc = concat!("Adds `delta` to `", #fname, "`; several calls sum.")]
                    #[must_use]
                    pub fn #ident(mut self, delta: #ty) -> Self {
                        self.#ident = Some(match self.#ident.take() {
                            Some(previous) => #gk::reducers::Summable::add_saturating(previous, delta),
                            None => delta,
                        });
                        self
                    }
                },
                quote! {
                    if let Some(value) = update.#ident {
                        if !#gk::reducers::Summable::add_checked(&mut self.#ident, value) {
                            return ::core::result::Result::Err(#gk::Error::AddOverflow { field: #fname });
                        }
                    }
                },
            ),
            Kind::Custom {
                func,
                update: explicit,
            } => {
                if explicit.is_some() {
                    from_state_possible = false;
                }
                (
                    quote!(Custom),
                    quote! {
                        #[doc = concat!("Sets the update of `", #fname, "` (merged by its custom reducer).")]
                        #[must_use]
                        pub fn #ident(mut self, update: impl Into<#uty>) -> Self {
                            self.#ident = Some(update.into());
                            self
                        }
                    },
                    quote! {
                        if let Some(value) = update.#ident {
                            #func(&mut self.#ident, value);
                        }
                    },
                )
            }
        };
        field_infos.push(quote! {
            #gk::reducers::Field { name: #fname, reducer: #gk::reducers::ReducerKind::#kind_tokens }
        });
        builders.push(builder);
        applies.push(apply);
        from_state.push(quote!(#ident: Some(state.#ident.into()),));
    }

    let idents: Vec<&Ident> = fields.iter().map(|f| &f.ident).collect();
    let names: Vec<String> = idents.iter().map(ToString::to_string).collect();
    let update_doc = format!(
        "A partial update of [`{name}`]: every field is optional and merges through its reducer. Generated by `#[derive(State)]`."
    );
    let serde_crate = syn::LitStr::new("::graphkit::__private::serde", Span::call_site());

    let from_impl = from_state_possible.then(|| {
        quote! {
            impl ::core::convert::From<#name> for #update {
                fn from(state: #name) -> Self {
                    Self { #(#from_state)* }
                }
            }

            impl ::core::convert::From<#name> for #gk::RunInput<#name> {
                fn from(state: #name) -> Self {
                    #gk::RunInput::Update(state.into())
                }
            }
        }
    });

    Ok(quote! {
        #[doc = #update_doc]
        #[derive(Clone, Debug, Default, #gk::__private::serde::Serialize, #gk::__private::serde::Deserialize)]
        #[serde(crate = #serde_crate, default)]
        #vis struct #update {
            #(#update_fields)*
        }

        impl #update {
            /// An empty update.
            pub fn new() -> Self {
                Self::default()
            }

            #(#builders)*
        }

        impl #gk::reducers::StateUpdate for #update {
            fn is_empty(&self) -> bool {
                true #(&& self.#idents.is_none())*
            }

            fn written_fields(&self) -> ::std::vec::Vec<&'static str> {
                let mut names = ::std::vec::Vec::new();
                #(if self.#idents.is_some() { names.push(#names); })*
                names
            }
        }

        impl #gk::State for #name {
            type Update = #update;

            const FIELDS: &'static [#gk::reducers::Field] = &[#(#field_infos),*];

            fn apply(
                &mut self,
                update: Self::Update,
                writes: &mut #gk::reducers::StepWrites,
            ) -> ::core::result::Result<(), #gk::Error> {
                let _ = &writes;
                #(#applies)*
                Ok(())
            }
        }

        impl ::core::convert::From<#update> for #gk::RunInput<#name> {
            fn from(update: #update) -> Self {
                #gk::RunInput::Update(update)
            }
        }

        impl #gk::nodes::IntoNodeOutput<#name> for #update {
            fn into_node_output(self) -> ::core::result::Result<#gk::nodes::NodeOutput<#name>, #gk::error::BoxError> {
                Ok(#gk::nodes::NodeOutput::Update(self))
            }
        }

        #from_impl
    })
}

/// `#[tool]` on an async fn makes it a graphkit-tools `Tool`: a unit struct of the
/// function's name that implements `Tool<S>` for every state, named after the function,
/// described by its doc comment, with the parameters as the arguments' JSON Schema. Used
/// through `graphkit_tools::tool`; see there.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return syn::Error::new(
            Span::call_site(),
            "#[tool] takes no arguments: the function's name is the tool's name and its doc comment the description",
        )
        .to_compile_error()
        .into();
    }
    let function = parse_macro_input!(item as syn::ItemFn);
    expand_tool(function)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

fn expand_tool(mut function: syn::ItemFn) -> syn::Result<Tokens> {
    let sig = &function.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            "#[tool] needs an `async fn`",
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "#[tool] functions cannot be generic: the arguments' schema is fixed",
        ));
    }
    let name = sig.ident.clone();
    let name_str = name.to_string();
    let vis = function.vis.clone();
    let description = function
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if description.is_empty() {
        return Err(syn::Error::new(
            name.span(),
            "a #[tool] needs a doc comment: it is the description the model reads",
        ));
    }
    let mut fields = Vec::new();
    let mut names = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Typed(pat) => match &*pat.pat {
                syn::Pat::Ident(ident) => {
                    let field = &ident.ident;
                    let ty = &pat.ty;
                    fields.push(quote!(#field: #ty));
                    names.push(field.clone());
                }
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "a #[tool] parameter is a plain name: `query: String`",
                    ));
                }
            },
            syn::FnArg::Receiver(r) => {
                return Err(syn::Error::new(
                    r.span(),
                    "a #[tool] is a free function, not a method",
                ));
            }
        }
    }
    let returns_result = match &sig.output {
        syn::ReturnType::Type(_, ty) => matches!(&**ty, Type::Path(p)
            if p.path.segments.last().is_some_and(|s| s.ident == "Result")),
        syn::ReturnType::Default => false,
    };
    let inner = format_ident!("__{}_tool_body", name);
    function.sig.ident = inner.clone();
    function.vis = syn::Visibility::Inherited;
    function.attrs.retain(|a| !a.path().is_ident("doc"));
    let call = quote!(#inner(#(#names),*).await);
    let output = if returns_result {
        quote!(::core::result::Result::Ok(#call.map_err(|e| tk::ToolError::Failed(e.to_string()))?.into()))
    } else {
        quote!(::core::result::Result::Ok(#call.into()))
    };
    let docs = function_docs(&description);
    Ok(quote! {
        #docs
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, Default)]
        #vis struct #name;

        const _: () = {
            use ::graphkit_tools::__private::tool as tk;

            #[derive(tk::serde::Deserialize, tk::schemars::JsonSchema)]
            #[serde(crate = "::graphkit_tools::__private::tool::serde")]
            #[schemars(crate = "::graphkit_tools::__private::tool::schemars")]
            struct Arguments { #(#fields),* }

            #function

            #[tk::async_trait]
            impl<S: tk::State> tk::Tool<S> for #name {
                fn name(&self) -> &str {
                    #name_str
                }

                fn description(&self) -> &str {
                    #description
                }

                fn parameters(&self) -> tk::Value {
                    tk::schema_for::<Arguments>()
                }

                async fn call(
                    &self,
                    args: tk::Value,
                    _runtime: tk::ToolRuntime<S>,
                ) -> ::core::result::Result<tk::ToolOutput<S>, tk::ToolError> {
                    let Arguments { #(#names),* } = tk::parse_args(#name_str, args)?;
                    #output
                }
            }
        };
    })
}

fn function_docs(description: &str) -> Tokens {
    let lines = description.lines().map(|line| format!(" {line}"));
    quote!(#(#[doc = #lines])*)
}

/// Derives `graphkit::Provides<T>` for each field marked `#[provide]`, which must be an
/// `Arc<T>` (`T` may be a trait object): nodes of a graph whose context is this struct may
/// then take `RunContext<T>`. Use it through `graphkit::Provides`.
#[proc_macro_derive(Provides, attributes(provide))]
pub fn derive_provides(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand_provides(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

fn expand_provides(input: &DeriveInput) -> syn::Result<Tokens> {
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new(
            Span::call_site(),
            "#[derive(Provides)] is for a struct whose fields are the parts of a graph's context",
        ));
    };
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut impls = Vec::new();
    for (index, field) in data.fields.iter().enumerate() {
        if !field.attrs.iter().any(|a| a.path().is_ident("provide")) {
            continue;
        }
        let member = match &field.ident {
            Some(ident) => quote!(#ident),
            None => {
                let index = syn::Index::from(index);
                quote!(#index)
            }
        };
        let Some(inner) = arc_inner(&field.ty) else {
            return Err(syn::Error::new(
                field.ty.span(),
                "a #[provide] field must be an `Arc<T>`: nodes read `RunContext<T>`, which shares it without a copy",
            ));
        };
        impls.push(quote! {
            impl #impl_generics ::graphkit::Provides<#inner> for #name #ty_generics #where_clause {
                fn provide(context: &::std::sync::Arc<Self>) -> ::std::sync::Arc<#inner> {
                    ::std::sync::Arc::clone(&context.#member)
                }
            }
        });
    }
    if impls.is_empty() {
        return Err(syn::Error::new(
            Span::call_site(),
            "#[derive(Provides)] needs at least one field marked #[provide] (an `Arc<T>`)",
        ));
    }
    Ok(quote!(#(#impls)*))
}

/// `T` of a field type written `Arc<T>` (or `std::sync::Arc<T>`).
fn arc_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Arc" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        syn::GenericArgument::Type(inner) if args.args.len() == 1 => Some(inner),
        _ => None,
    }
}
