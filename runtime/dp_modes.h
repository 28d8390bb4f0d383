// The data-parallel modes behind CreateDataParallelSync, one factory per dp_<mode>.cc.
//
// Internal to runtime/: CreateDataParallelSync has already checked what every mode relies on
// (a transport of D >= 2 ranks, defined floating-point parameters, a non-negative timeout).
#pragma once

#include <memory>

#include "common/status.h"
#include "runtime/data_parallel_sync.h"

namespace geotrain::runtime {

std::unique_ptr<DataParallelSync> NewAllReduceSync(const DataParallelContext& context);
StatusOr<std::unique_ptr<DataParallelSync>> NewPowerSgdSync(const DataParallelSettings& settings,
                                                            const DataParallelContext& context);
StatusOr<std::unique_ptr<DataParallelSync>> NewCocktailSync(const DataParallelSettings& settings,
                                                            const DataParallelContext& context);
StatusOr<std::unique_ptr<DataParallelSync>> NewQuantizedMomentumSync(
    const DataParallelSettings& settings, const DataParallelContext& context);

}  // namespace geotrain::runtime
