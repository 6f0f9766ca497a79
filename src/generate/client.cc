#include "generate/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "util/interrupt.h"

namespace kbv {

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

struct Attempt {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lowercase names, of the final response
  std::string curl_error;
  double seconds = 0;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  static_cast<Attempt*>(user)->body.append(data, size * count);
  return size * count;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* a = static_cast<Attempt*>(user);
  std::string line(data, size * count);
  if (line.starts_with("HTTP/")) a->headers.clear();  // a new response (after 100 Continue, say)
  size_t colon = line.find(':');
  if (colon != std::string::npos) a->headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  return size * count;
}

int on_progress(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) { return interrupted() ? 1 : 0; }

Attempt perform(const EndpointOptions& endpoint, const std::string& payload) {
  Attempt a;
  auto t0 = Clock::now();
  CURL* curl = curl_easy_init();
  if (!curl) {
    a.code = CURLE_FAILED_INIT;
    a.curl_error = "cannot create a libcurl handle";
    return a;
  }
  char error_buffer[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Accept: application/json");
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  std::string auth;
  if (!endpoint.api_key.empty()) {
    auth = "Authorization: Bearer " + endpoint.api_key;
    headers = curl_slist_append(headers, auth.c_str());
  }
  auto timeout_ms = static_cast<long>(endpoint.request_timeout_s * 1000);
  curl_easy_setopt(curl, CURLOPT_URL, endpoint.url.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, payload.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "kbv/" KBV_VERSION);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &a);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 30000L));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  a.code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a.status);
  if (a.code != CURLE_OK) a.curl_error = error_buffer[0] ? error_buffer : curl_easy_strerror(a.code);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  a.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return a;
}

bool retryable_transport(CURLcode code) {
  switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_ABORTED_BY_CALLBACK:
    case CURLE_FAILED_INIT:
      return false;
    default:
      return true;
  }
}

bool retryable_status(long status) { return status == 408 || status == 409 || status == 425 || status == 429 || status >= 500; }

// What an error body says, short, with the key (should an endpoint echo it) removed.
std::string error_excerpt(const std::string& body, const std::string& api_key) {
  std::string text;
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string())
      text = e["message"].get<std::string>();
    else if (e.is_string())
      text = e.get<std::string>();
  }
  if (text.empty() && j.is_object() && j.contains("detail") && j["detail"].is_string()) text = j["detail"].get<std::string>();
  if (text.empty()) text = trim(body);
  if (!api_key.empty())
    for (size_t pos; (pos = text.find(api_key)) != std::string::npos;) text.replace(pos, api_key.size(), "<api key>");
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  if (text.size() > 300) text = text.substr(0, 300) + "...";
  return text.empty() ? "(empty body)" : text;
}

// Retry-After in seconds (the HTTP-date form is not used by these endpoints).
std::optional<double> retry_after(const std::map<std::string, std::string>& headers) {
  auto it = headers.find("retry-after");
  if (it == headers.end()) return std::nullopt;
  try {
    size_t used = 0;
    double s = std::stod(it->second, &used);
    if (used > 0 && s >= 0) return s;
  } catch (...) {
  }
  return std::nullopt;
}

// Sleeps in short slices so that Ctrl-C is not kept waiting. False when interrupted.
bool wait(double seconds) {
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    if (interrupted()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::duration<double>>(end - Clock::now(), std::chrono::milliseconds(50)));
  }
  return !interrupted();
}

// message.content as text: a string, or an array of {type: text, text} parts.
std::string text_of(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array())
    for (const auto& part : content)
      if (part.is_object() && part.contains("text") && part["text"].is_string()) out += part["text"].get<std::string>();
  return out;
}

// Reads the answer out of a 200 body. "" or the reason it is not a chat completion.
std::string read_completion(const std::string& body, const std::map<std::string, std::string>& headers,
                            ChatResult& r) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return "the body is not JSON: " + error_excerpt(body, "");
  if (j.contains("error") && !j["error"].is_null()) return "the endpoint reported an error: " + error_excerpt(body, "");
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty() || !j["choices"][0].is_object())
    return "no choices in the answer: " + error_excerpt(body, "");
  const json& choice = j["choices"][0];
  json message = choice.value("message", json::object());
  if (!message.is_object()) message = json::object();
  r.content = text_of(message.value("content", json()));
  if (r.content.empty() && message.contains("refusal") && message["refusal"].is_string())
    r.content = message["refusal"].get<std::string>();
  for (const char* key : {"reasoning_content", "reasoning"})
    if (message.contains(key) && message[key].is_string() && !message[key].get<std::string>().empty()) {
      r.reasoning = message[key].get<std::string>();
      break;
    }
  r.finish_reason = choice.contains("finish_reason") && choice["finish_reason"].is_string()
                        ? choice["finish_reason"].get<std::string>()
                        : "";
  r.usage = j.contains("usage") ? j["usage"] : json();
  if (r.usage.is_object() && r.usage.contains("cost") && r.usage["cost"].is_number())
    r.cost_usd = r.usage["cost"].get<double>();
  if (auto it = headers.find("x-litellm-response-cost"); !r.cost_usd && it != headers.end()) {
    try {
      r.cost_usd = std::stod(it->second);
    } catch (...) {
    }
  }
  r.response = std::move(j);
  return "";
}

}  // namespace

std::string init_http() {
  CURLcode code = curl_global_init(CURL_GLOBAL_DEFAULT);
  return code == CURLE_OK ? "" : std::string("cannot initialise libcurl: ") + curl_easy_strerror(code);
}

std::string chat_completions_url(const std::string& endpoint, std::string& error) {
  std::string url = trim(endpoint);
  if (!url.starts_with("http://") && !url.starts_with("https://")) {
    error = "--endpoint " + endpoint + ": not an http:// or https:// URL (for example https://api.openai.com/v1)";
    return "";
  }
  while (url.ends_with("/")) url.pop_back();
  if (!url.ends_with("/chat/completions")) url += "/chat/completions";
  return url;
}

std::string url_host(const std::string& url) {
  size_t start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  size_t end = url.find_first_of("/?#", start);
  std::string host = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (size_t at = host.rfind('@'); at != std::string::npos) host = host.substr(at + 1);  // no user:password
  return host;
}

ChatResult chat_completion(const EndpointOptions& endpoint, const json& body) {
  ChatResult r;
  auto t0 = Clock::now();
  const std::string payload = body.dump();
  thread_local std::mt19937 rng{std::random_device{}()};
  for (int attempt = 1;; ++attempt) {
    r.attempts = attempt;
    Attempt a = perform(endpoint, payload);
    r.http_status = static_cast<int>(a.status);
    if (a.code == CURLE_ABORTED_BY_CALLBACK || interrupted()) {
      r.interrupted = true;
      r.error = "interrupted";
      break;
    }
    std::string failure;
    bool retry = false;
    if (a.code != CURLE_OK) {
      failure = a.code == CURLE_OPERATION_TIMEDOUT
                    ? fmt::format("no answer within {:g} s (--request-timeout)", endpoint.request_timeout_s)
                    : a.curl_error;
      retry = retryable_transport(a.code);
    } else if (a.status < 200 || a.status >= 300) {
      failure = fmt::format("HTTP {}: {}", a.status, error_excerpt(a.body, endpoint.api_key));
      retry = retryable_status(a.status);
    } else {
      failure = read_completion(a.body, a.headers, r);
      retry = failure.starts_with("the body is not JSON");  // cut off on the way
      if (failure.empty()) {
        r.ok = true;
        r.latency_s = a.seconds;
        break;
      }
    }
    if (!retry || attempt > endpoint.retries) {
      r.attempt_errors.push_back(fmt::format("attempt {}: {}", attempt, failure));
      r.error = failure;
      r.retryable = retry;
      if (retry) r.error += fmt::format(" (gave up after {} attempt{})", attempt, attempt == 1 ? "" : "s");
      break;
    }
    double backoff = std::min(endpoint.backoff_max_s, endpoint.backoff_s * std::pow(2.0, attempt - 1));
    backoff *= std::uniform_real_distribution<double>(0.5, 1.0)(rng);
    if (auto after = retry_after(a.headers)) backoff = std::min(endpoint.backoff_max_s, *after);
    r.attempt_errors.push_back(fmt::format("attempt {}: {} (retried after {:.1f} s)", attempt, failure, backoff));
    if (endpoint.on_retry) endpoint.on_retry(attempt, failure, backoff);
    if (!wait(backoff)) {
      r.interrupted = true;
      r.error = "interrupted";
      break;
    }
  }
  r.total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

}  // namespace kbv
