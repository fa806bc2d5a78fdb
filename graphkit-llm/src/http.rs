//! The HTTP client every graphkit crate builds its requests with: reqwest over rustls, with
//! the ring crypto provider (see the workspace's `docs/building.md`, "TLS").

/// Makes ring the process-wide rustls crypto provider, unless the application installed one
/// first (for example aws-lc-rs, for its post-quantum key exchange). Idempotent and cheap:
/// every client builder of graphkit calls it.
///
/// Call it yourself only before building a `reqwest::Client` of your own in a program that
/// installs no provider; graphkit's own clients need nothing.
pub fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Fails only when another thread installed a provider in between: that one serves.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// A `reqwest::ClientBuilder` whose TLS has a crypto provider ([`install_tls_provider`]).
///
/// ```
/// let client = graphkit_llm::http::client_builder()
///     .timeout(std::time::Duration::from_secs(30))
///     .build()
///     .expect("a client");
/// # drop(client);
/// ```
pub fn client_builder() -> reqwest::ClientBuilder {
    install_tls_provider();
    reqwest::Client::builder()
}
