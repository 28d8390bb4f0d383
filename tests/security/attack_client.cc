// attack_client: raw Register, Session and Kv* calls to a coordinator with the credentials it is
// given, for the attack scripts of tests/security/ (what a client holding one worker's
// certificate and the join token could send). A test program, not a tool: it never retries.
//
//   attack_client --coordinator HOST:PORT --ca CA --cert CERT --key KEY --token TOKEN_FILE CMD...
//     register ID                     Register claiming worker id ID ("" : a new worker)
//     session ID SECONDS              a Session as ID, heartbeats every 200 ms for SECONDS;
//                                     prints each Assignment (and whether it carried a key)
//     kv-set JOB GEN KEY VALUE        KvSet
//     kv-get JOB GEN KEY              KvGet without waiting
//     kv-delete JOB GEN KEY           KvDelete
//     kv-numkeys JOB GEN              KvNumKeys
//     kv-fill JOB GEN BYTES COUNT     COUNT KvSets of BYTES each (keys fill-0, fill-1, ...),
//                                     stopping at the first error
//
// Prints "OK ..." or "REFUSED <CODE>: <message>" and exits 0 or 2 (1: bad usage or credentials).
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/auth/channel_credentials.h"
#include "geotrain/v1/coordinator.grpc.pb.h"
#include "geotrain/v1/rendezvous.grpc.pb.h"
#include "proto/grpc_code_name.h"

namespace {

namespace v1 = geotrain::v1;
constexpr std::chrono::seconds kDeadline{20};

int Report(const grpc::Status& status, const std::string& ok_text) {
  if (status.ok()) {
    std::cout << "OK " << ok_text << std::endl;
    return 0;
  }
  std::cout << "REFUSED " << geotrain::proto::GrpcCodeName(status.error_code()) << ": "
            << status.error_message() << std::endl;
  return 2;
}

template <typename Call>
grpc::Status WithDeadline(Call call) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kDeadline);
  return call(&context);
}

v1::KvScope Scope(const std::string& job, const std::string& generation) {
  v1::KvScope scope;
  scope.set_job_id(job);
  scope.set_generation(static_cast<uint32_t>(std::stoul(generation)));
  return scope;
}

int RunSession(v1::Coordinator::Stub& stub, const std::string& id, int seconds) {
  grpc::ClientContext context;
  auto stream = stub.Session(&context);
  v1::WorkerMessage hello;
  hello.mutable_hello()->set_worker_id(id);
  if (!stream->Write(hello)) return Report(stream->Finish(), "");
  std::thread reader([&stream] {
    v1::CoordinatorMessage message;
    while (stream->Read(&message)) {
      if (message.has_assign()) {
        std::cout << "ASSIGNMENT " << message.assign().job_id() << " generation "
                  << message.assign().generation() << " frame_key_bytes "
                  << message.assign().frame_key().size() << std::endl;
      }
    }
  });
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  bool open = true;
  while (open && std::chrono::steady_clock::now() < end) {
    v1::WorkerMessage beat;
    beat.mutable_heartbeat()->set_unix_ms(0);
    open = stream->Write(beat);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (open) {
    stream->WritesDone();
    context.TryCancel();
  }
  reader.join();
  const grpc::Status status = stream->Finish();
  if (open && status.error_code() == grpc::StatusCode::CANCELLED) {
    return Report(grpc::Status::OK, "session held for " + std::to_string(seconds) + " s");
  }
  return Report(status, "session ended");
}

int Usage() {
  std::cerr << "usage: attack_client --coordinator ADDR --ca CA --cert CERT --key KEY --token "
               "FILE CMD ARGS... (see attack_client.cc)\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  geotrain::auth::ClientCredentialFiles files;
  std::string coordinator;
  std::vector<std::string> command;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--coordinator" && has_value) {
      coordinator = argv[++i];
    } else if (arg == "--ca" && has_value) {
      files.ca.path = argv[++i];
    } else if (arg == "--cert" && has_value) {
      files.cert.path = argv[++i];
    } else if (arg == "--key" && has_value) {
      files.key.path = argv[++i];
    } else if (arg == "--token" && has_value) {
      files.token.path = argv[++i];
    } else {
      command.push_back(arg);
    }
  }
  if (coordinator.empty() || command.empty()) return Usage();
  auto credentials = geotrain::auth::MakeChannelCredentials(files);
  if (!credentials.ok()) {
    std::cerr << credentials.status().ToString() << "\n";
    return 1;
  }
  auto channel = grpc::CreateChannel(coordinator, *credentials);
  auto coordinator_stub = v1::Coordinator::NewStub(channel);
  auto kv = v1::Rendezvous::NewStub(channel);
  const std::string& cmd = command[0];
  const size_t args = command.size() - 1;
  try {
    if (cmd == "register" && args <= 1) {
      v1::RegisterRequest request;
      if (args == 1) request.set_worker_id(command[1]);
      request.mutable_capabilities()->set_region("attacker");
      v1::RegisterResponse response;
      const grpc::Status status = WithDeadline([&](grpc::ClientContext* c) {
        return coordinator_stub->Register(c, request, &response);
      });
      return Report(status, "worker_id " + response.worker_id());
    }
    if (cmd == "session" && args == 2) {
      return RunSession(*coordinator_stub, command[1], std::stoi(command[2]));
    }
    if (cmd == "kv-set" && args == 4) {
      v1::KvSetRequest request;
      *request.mutable_scope() = Scope(command[1], command[2]);
      request.set_key(command[3]);
      request.set_value(command[4]);
      v1::KvSetResponse response;
      return Report(
          WithDeadline([&](grpc::ClientContext* c) { return kv->KvSet(c, request, &response); }),
          "set");
    }
    if (cmd == "kv-get" && args == 3) {
      v1::KvGetRequest request;
      *request.mutable_scope() = Scope(command[1], command[2]);
      request.set_key(command[3]);
      v1::KvGetResponse response;
      return Report(
          WithDeadline([&](grpc::ClientContext* c) { return kv->KvGet(c, request, &response); }),
          "value of " + std::to_string(response.value().size()) + " bytes");
    }
    if (cmd == "kv-delete" && args == 3) {
      v1::KvDeleteRequest request;
      *request.mutable_scope() = Scope(command[1], command[2]);
      request.set_key(command[3]);
      v1::KvDeleteResponse response;
      return Report(
          WithDeadline([&](grpc::ClientContext* c) { return kv->KvDelete(c, request, &response); }),
          response.deleted() ? "deleted" : "absent");
    }
    if (cmd == "kv-numkeys" && args == 2) {
      v1::KvNumKeysRequest request;
      *request.mutable_scope() = Scope(command[1], command[2]);
      v1::KvNumKeysResponse response;
      return Report(WithDeadline([&](grpc::ClientContext* c) {
                      return kv->KvNumKeys(c, request, &response);
                    }),
                    std::to_string(response.count()) + " keys");
    }
    if (cmd == "kv-fill" && args == 4) {
      const std::string value(std::stoul(command[3]), 'x');
      const int count = std::stoi(command[4]);
      grpc::Status status;
      int stored = 0;
      for (; stored < count; ++stored) {
        v1::KvSetRequest request;
        *request.mutable_scope() = Scope(command[1], command[2]);
        request.set_key("fill-" + std::to_string(stored));
        request.set_value(value);
        v1::KvSetResponse response;
        status =
            WithDeadline([&](grpc::ClientContext* c) { return kv->KvSet(c, request, &response); });
        if (!status.ok()) break;
      }
      std::cout << "STORED " << stored << std::endl;
      return Report(status, "filled");
    }
  } catch (const std::exception& e) {
    std::cerr << "bad argument: " << e.what() << "\n";
    return 1;
  }
  return Usage();
}
