// A client for OpenAI-compatible chat-completions endpoints (OpenAI, vLLM, SGLang, LiteLLM and
// others), over libcurl: retries with backoff on 429/5xx and transport errors, a per-request
// timeout, Ctrl-C aborts a request in flight. The API key is sent, never logged or stored.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kbv {

struct EndpointOptions {
  std::string url;               // the full .../chat/completions URL (see chat_completions_url)
  std::string api_key;           // empty: no Authorization header
  double request_timeout_s = 600;
  int retries = 5;               // further attempts after the first
  double backoff_s = 2;          // the first wait; doubled each retry, with jitter
  double backoff_max_s = 60;
  // Called (from the requesting thread) before each wait for a retry: the attempt that failed,
  // why, and the seconds it waits. Optional.
  std::function<void(int attempt, const std::string& failure, double wait_s)> on_retry;
};

// "https://api.openai.com/v1" -> ".../v1/chat/completions"; a URL already ending in
// /chat/completions is kept. Returns "" with `error` for a URL without http:// or https://.
std::string chat_completions_url(const std::string& endpoint, std::string& error);

// The host part of a URL ("api.openai.com", "127.0.0.1:8000"), for records.
std::string url_host(const std::string& url);

struct ChatResult {
  bool ok = false;
  bool interrupted = false;       // Ctrl-C: abandoned, nothing to record
  std::string error;              // why it failed, after the last attempt
  int attempts = 0;
  std::vector<std::string> attempt_errors;  // "attempt 1: HTTP 429: rate limited (waited 2.0 s)"
  int http_status = 0;            // of the last attempt
  bool retryable = false;         // the last failure is of a kind that is retried (429, 5xx, transport)
  nlohmann::json response;        // the parsed body of the successful attempt
  std::string content;            // choices[0].message.content
  std::string reasoning;          // choices[0].message.reasoning_content or .reasoning, if separate
  std::string finish_reason;
  nlohmann::json usage;           // as reported, or null
  std::optional<double> cost_usd; // when the endpoint reports it (usage.cost, x-litellm-response-cost)
  double latency_s = 0;           // of the successful attempt
  double total_s = 0;             // all attempts and waits
};

// Sends one chat-completions request (`body` as JSON). Call curl_global_init before threads
// start (init_http); thread-safe otherwise.
ChatResult chat_completion(const EndpointOptions& endpoint, const nlohmann::json& body);

// libcurl's global set-up, once per process before any thread uses it. Returns "" or an error.
std::string init_http();

}  // namespace kbv
