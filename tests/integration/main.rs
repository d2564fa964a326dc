//! The integration test binary: the real server on an ephemeral port against local
//! fixture sites, the real binary as a child process, and the official Python SDK.

#[path = "../common/mod.rs"]
mod common;

mod address_policy;
mod architecture;
mod batch;
mod browser;
mod browser_sessions;
mod browser_warm;
mod cache;
mod change;
mod cli;
mod cluster;
mod cluster_batches;
mod cluster_browser;
mod cluster_cache;
mod cluster_credits;
mod cluster_llm;
mod cluster_sitemaps;
mod cluster_spacing;
mod cluster_split;
mod cluster_stops;
mod cluster_tls;
mod cluster_upgrade;
mod crawl;
mod deep_pages;
mod discovery;
mod documents;
mod durability;
mod engine;
mod faults;
mod hostile;
mod interact;
mod llm;
mod llm_jobs;
mod map;
mod observe;
mod openapi;
mod parse;
mod releases;
mod sandbox;
mod scrape;
mod sdk;
mod search;
mod security;
mod storage;
mod teams;
mod upgrade;
mod validation;
mod webhooks;
