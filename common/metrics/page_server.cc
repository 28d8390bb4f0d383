#include "common/metrics/page_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <utility>
#include <vector>

namespace geotrain {
namespace {

using Clock = std::chrono::steady_clock;

std::string Answer(const std::string& status, const std::string& content_type,
                   const std::string& body, bool head_only) {
  std::string text = "HTTP/1.1 " + status + "\r\nContent-Type: " + content_type +
                     "\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\nConnection: close\r\n";
  if (status.rfind("405", 0) == 0) text += "Allow: GET, HEAD\r\n";
  text += "\r\n";
  if (!head_only) text += body;
  return text;
}

// The end of the request head ("\r\n\r\n", or "\n\n" from a lenient client), or npos.
size_t HeadEnd(const std::string& in) {
  const size_t crlf = in.find("\r\n\r\n");
  const size_t lf = in.find("\n\n");
  return std::min(crlf == std::string::npos ? crlf : crlf + 4,
                  lf == std::string::npos ? lf : lf + 2);
}

}  // namespace

struct PageServer::Loop {
  struct Connection {
    int fd;
    Clock::time_point accepted;
    std::string in;
    std::string out;  // the answer, once the request head is in
    size_t sent = 0;
    bool answering = false;
  };

  int listen_fd = -1;
  int wake_fd = -1;
  std::string name;  // "--metrics-listen 10.0.0.1:9400", for the log
  std::string path;
  std::string content_type;
  Render render;
  Limits limits;
  std::deque<Connection> connections;  // in accept order: the front is the oldest
  // Connections cut since the last log line; logged at most every 10 s, so a flood cannot
  // flood the log too.
  int64_t cut_silent = 0;   // no request head by the header deadline
  int64_t cut_slow = 0;     // the answer not taken by the exchange deadline
  int64_t cut_crowded = 0;  // closed as the oldest to admit a new one
  Clock::time_point last_log;

  ~Loop() {
    for (const Connection& c : connections) ::close(c.fd);
    if (listen_fd >= 0) ::close(listen_fd);
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void Run() {
    std::vector<pollfd> fds;
    for (;;) {
      fds.clear();
      fds.push_back({wake_fd, POLLIN, 0});
      fds.push_back({listen_fd, POLLIN, 0});
      for (const Connection& c : connections) {
        fds.push_back({c.fd, static_cast<short>(c.answering ? POLLOUT : POLLIN), 0});
      }
      if (::poll(fds.data(), fds.size(), NextTimeoutMs()) < 0 && errno != EINTR) return;
      if (fds[0].revents != 0) return;  // stopping
      // Connections first (their indices match fds), then the new ones, then the deadlines.
      std::vector<bool> done(connections.size(), false);
      for (size_t i = 0; i < connections.size(); ++i) {
        if (fds[i + 2].revents != 0) done[i] = !Serve(connections[i]);
      }
      for (size_t i = connections.size(); i-- > 0;) {
        if (done[i]) Close(i);
      }
      if (fds[1].revents & POLLIN) AcceptAll();
      CloseExpired();
      LogCuts();
    }
  }

  void LogCuts() {
    if (cut_silent + cut_slow + cut_crowded == 0) return;
    const Clock::time_point now = Clock::now();
    if (last_log != Clock::time_point() && now - last_log < std::chrono::seconds(10)) return;
    spdlog::warn(
        "{}: closed {} connections that sent no complete request within {} ms, {} that did not "
        "take their answer within {} ms, and {} oldest ones to stay under {} open",
        name, cut_silent, limits.header_timeout.count(), cut_slow, limits.exchange_timeout.count(),
        cut_crowded, limits.max_connections);
    cut_silent = cut_slow = cut_crowded = 0;
    last_log = now;
  }

  int NextTimeoutMs() const {
    if (connections.empty()) return -1;
    Clock::time_point next = Clock::time_point::max();
    for (const Connection& c : connections) next = std::min(next, Deadline(c));
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
    return static_cast<int>(std::clamp<int64_t>(wait.count() + 1, 0, 60'000));
  }

  Clock::time_point Deadline(const Connection& c) const {
    return c.accepted + (c.answering ? limits.exchange_timeout : limits.header_timeout);
  }

  void AcceptAll() {
    for (;;) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or out of descriptors until some close
      if (connections.size() >= limits.max_connections) {
        Close(0);
        ++cut_crowded;
      }
      connections.push_back(Connection{fd, Clock::now(), {}, {}, 0, false});
    }
  }

  void CloseExpired() {
    const Clock::time_point now = Clock::now();
    for (size_t i = connections.size(); i-- > 0;) {
      if (now >= Deadline(connections[i])) {
        ++(connections[i].answering ? cut_slow : cut_silent);
        Close(i);
      }
    }
  }

  void Close(size_t index) {
    ::close(connections[index].fd);
    connections.erase(connections.begin() + static_cast<std::ptrdiff_t>(index));
  }

  // Reads or writes what the connection is ready for; false: it is finished (or broken).
  bool Serve(Connection& c) {
    if (!c.answering) {
      char buffer[4096];
      const ssize_t n = ::recv(c.fd, buffer, sizeof(buffer), 0);
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      c.in.append(buffer, static_cast<size_t>(n));
      const size_t end = HeadEnd(c.in);
      if (end == std::string::npos) {
        if (c.in.size() <= limits.max_header_bytes) return true;
        c.out = Answer("431 Request Header Fields Too Large", "text/plain",
                       "request head too long\n", false);
      } else if (end > limits.max_header_bytes) {
        c.out = Answer("431 Request Header Fields Too Large", "text/plain",
                       "request head too long\n", false);
      } else {
        c.out = Respond(c.in.substr(0, end));
      }
      c.answering = true;
    }
    while (c.sent < c.out.size()) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      c.sent += static_cast<size_t>(n);
    }
    ::shutdown(c.fd, SHUT_WR);
    return false;
  }

  // The answer to a request head: "GET /metrics HTTP/1.1", headers ignored.
  std::string Respond(const std::string& head) {
    const std::string line = head.substr(0, head.find_first_of("\r\n"));
    const size_t first_space = line.find(' ');
    const size_t last_space = line.rfind(' ');
    if (first_space == std::string::npos || last_space == first_space ||
        line.compare(last_space + 1, 7, "HTTP/1.") != 0) {
      return Answer("400 Bad Request", "text/plain", "not an HTTP/1.x request line\n", false);
    }
    const std::string method = line.substr(0, first_space);
    std::string target = line.substr(first_space + 1, last_space - first_space - 1);
    target = target.substr(0, target.find('?'));
    const bool head_only = method == "HEAD";
    if (method != "GET" && !head_only) {
      return Answer("405 Method Not Allowed", "text/plain", "only GET and HEAD\n", false);
    }
    if (target != path) {
      return Answer("404 Not Found", "text/plain", "not found; try " + path + "\n", head_only);
    }
    return Answer("200 OK", content_type, render(), head_only);
  }
};

StatusOr<std::unique_ptr<PageServer>> PageServer::Start(const io::HostPort& where,
                                                        const std::string& flag, std::string path,
                                                        std::string content_type, Render render,
                                                        Limits limits) {
  const std::string address = where.ToString();
  const auto unavailable = [&](const std::string& reason) {
    return Unavailable(flag + ": cannot serve metrics on " + address + ": " + reason);
  };
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(where.port);
  const int lookup = ::getaddrinfo(where.host.c_str(), port_text.c_str(), &hints, &found);
  if (lookup != 0) return unavailable(::gai_strerror(lookup));
  auto loop = std::make_unique<Loop>();
  std::string reason = "no usable address";
  for (addrinfo* ai = found; ai != nullptr && loop->listen_fd < 0; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      loop->listen_fd = fd;
    } else {
      reason = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (loop->listen_fd < 0) return unavailable(reason);
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  if (::getsockname(loop->listen_fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    return unavailable(std::strerror(errno));
  }
  const int port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  loop->wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (loop->wake_fd < 0) return unavailable(std::string("eventfd: ") + std::strerror(errno));
  loop->name = flag + " " + address;
  loop->path = std::move(path);
  loop->content_type = std::move(content_type);
  loop->render = std::move(render);
  loop->limits = limits;
  return std::unique_ptr<PageServer>(new PageServer(std::move(loop), port));
}

PageServer::PageServer(std::unique_ptr<Loop> loop, int port) : loop_(std::move(loop)), port_(port) {
  thread_ = std::thread([this] { loop_->Run(); });
}

PageServer::~PageServer() {
  const uint64_t one = 1;
  if (::write(loop_->wake_fd, &one, sizeof(one)) < 0) {
    // An eventfd write fails only when its counter is full, which already wakes the loop.
  }
  thread_.join();
}

}  // namespace geotrain
