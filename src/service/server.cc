#include "service/server.h"

#include <openssl/crypto.h>

#include <fmt/format.h>
#include <httplib.h>

namespace kbv::service {

std::string parse_listen(const std::string& text, std::string& host, int& port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    return fmt::format("--listen: expected HOST:PORT (127.0.0.1:8080, 0.0.0.0:8080), got '{}'", text);
  host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  std::string p = text.substr(colon + 1);
  if (p.find_first_not_of("0123456789") != std::string::npos || p.size() > 5 || std::stoi(p) > 65535)
    return fmt::format("--listen: the port must be a number from 0 to 65535, got '{}'", p);
  port = std::stoi(p);
  return "";
}

struct HttpServer::Impl {
  Api& api;
  Metrics& metrics;
  ServerConfig config;
  httplib::Server server;
  Impl(Api& a, Metrics& m, ServerConfig c) : api(a), metrics(m), config(std::move(c)) {}
};

namespace {

void send(httplib::Response& res, const Response& r) {
  res.status = r.status;
  res.set_content(r.body.dump() + "\n", "application/json");
}

bool authorized(const httplib::Request& req, const std::string& token) {
  std::string header = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  if (header.size() != prefix.size() + token.size() || header.compare(0, prefix.size(), prefix) != 0) return false;
  return CRYPTO_memcmp(header.data() + prefix.size(), token.data(), token.size()) == 0;
}

}  // namespace

HttpServer::HttpServer(Api& api, Metrics& metrics, ServerConfig config)
    : impl_(std::make_unique<Impl>(api, metrics, std::move(config))) {
  httplib::Server& s = impl_->server;
  Impl* self = impl_.get();
  s.new_task_queue = [n = self->config.threads] { return new httplib::ThreadPool(static_cast<size_t>(n)); };
  s.set_payload_max_length(self->config.max_body_bytes);
  s.set_read_timeout(30, 0);
  s.set_write_timeout(30, 0);
  s.set_pre_routing_handler([self](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/healthz") return httplib::Server::HandlerResponse::Unhandled;
    if (authorized(req, self->config.token)) return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("WWW-Authenticate", "Bearer");
    send(res, error_response(401, req.has_header("Authorization")
                                      ? "wrong token (Authorization: Bearer <the token of the server's --token-file>)"
                                      : "missing Authorization: Bearer <token> header"));
    return httplib::Server::HandlerResponse::Handled;
  });
  s.Post("/v1/evaluations", [self](const httplib::Request& req, httplib::Response& res) {
    send(res, self->api.submit(req.body));
  });
  s.Post("/v1/batches", [self](const httplib::Request& req, httplib::Response& res) {
    send(res, self->api.submit_batch(req.body));
  });
  s.Get(R"(/v1/evaluations/([A-Za-z0-9_.-]{1,128}))", [self](const httplib::Request& req, httplib::Response& res) {
    send(res, self->api.get(req.matches[1], req.get_param_value("wait")));
  });
  s.Get("/healthz", [self](const httplib::Request&, httplib::Response& res) { send(res, self->api.health()); });
  s.Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(self->api.metrics_text(), "text/plain; version=0.0.4");
  });
  // Answers httplib makes itself (no route, a body over the limit, a request it cannot read)
  // get the same JSON error body as the API's own.
  s.set_error_handler(httplib::Server::HandlerWithResponse([self](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message;
    switch (res.status) {
      case 404: message = fmt::format("no such route: {} {} (docs/SERVICE.md lists the API)", req.method, req.path); break;
      case 413:
        message = fmt::format("request body too large: this server takes at most {} bytes", self->config.max_body_bytes);
        break;
      case 400: message = "malformed HTTP request"; break;
      default: message = fmt::format("HTTP {}", res.status);
    }
    send(res, error_response(res.status, message));
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send(res, error_response(500, "internal error: " + what));
  });
  s.set_logger([self](const httplib::Request&, const httplib::Response& res) { self->metrics.answered(res.status); });
}

HttpServer::~HttpServer() = default;

int HttpServer::bind(std::string& error) {
  Impl& i = *impl_;
  int port = i.config.port;
  bool ok = port == 0 ? (port = i.server.bind_to_any_port(i.config.host)) > 0 : i.server.bind_to_port(i.config.host, port);
  if (!ok) {
    error = fmt::format("cannot listen on {}:{} (in use, or not an address of this host)", i.config.host, i.config.port);
    return -1;
  }
  return port;
}

void HttpServer::run() { impl_->server.listen_after_bind(); }

void HttpServer::stop() { impl_->server.stop(); }

}  // namespace kbv::service
