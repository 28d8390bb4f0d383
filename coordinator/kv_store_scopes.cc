#include "coordinator/kv_store_scopes.h"

#include "coordinator/kv_store.h"

namespace geotrain::coordinator {
namespace {

class Scopes final : public RendezvousScopes {
 public:
  explicit Scopes(KvStore* store) : store_(store) {}
  void DropScope(const std::string& job_id, uint32_t generation) override {
    store_->DropScope(job_id, generation);
  }
  void DropJob(const std::string& job_id) override { store_->DropJob(job_id); }

 private:
  KvStore* store_;
};

}  // namespace

std::unique_ptr<RendezvousScopes> KvStoreScopes(KvStore* store) {
  return std::make_unique<Scopes>(store);
}

}  // namespace geotrain::coordinator
