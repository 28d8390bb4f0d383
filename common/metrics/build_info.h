// What was built: the project version and the git revision at configure time.
#pragma once

namespace geotrain {

const char* GeotrainVersion();   // "0.1.0"
const char* GeotrainRevision();  // short git hash, or "unknown" outside a git checkout

}  // namespace geotrain
