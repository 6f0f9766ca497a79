// The evaluation API on HTTP (cpp-httplib, DESIGN.md "The service"): routes, bearer-token
// authentication, bounded bodies, and a JSON error body on every 4xx/5xx answer.
#pragma once
#include <memory>
#include <string>

#include "service/api.h"

namespace kbv::service {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;                          // 0: any free port (bind() says which)
  std::string token;                        // "Authorization: Bearer <token>" on every route but /healthz
  size_t max_body_bytes = 8u << 20;         // larger bodies get 413 before they are read
  int threads = 32;                         // requests served at once (long-polls hold one each)
};

// "HOST:PORT" -> host and port; "" or what is wrong ("--listen: expected HOST:PORT, got 'x'").
std::string parse_listen(const std::string& text, std::string& host, int& port);

class HttpServer {
 public:
  HttpServer(Api& api, Metrics& metrics, ServerConfig config);
  ~HttpServer();
  // Binds the socket: the port (the chosen one for port 0), or -1 with `error` set.
  int bind(std::string& error);
  void run();   // serves until stop(); call after bind()
  void stop();  // from any thread

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kbv::service
