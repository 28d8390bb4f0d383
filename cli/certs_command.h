// `geotrain certs init --dir DIR [--hosts h1,h2,IP] [--days N] [--force]`: makes a deployment's CA,
// the coordinator's and the workers' certificates and the two tokens (auth::InitDeploymentCerts),
// then prints what it wrote and the flags each program needs.
// `geotrain certs add-worker --dir DIR --name NAME [--days N] [--force]`: one worker's own
// certificate (auth::AddWorkerCert), with its fingerprint and the worker's flags.
#pragma once

#include <ostream>

#include "common/auth/deployment_certs.h"

namespace geotrain::cli {

// The exit code: 0 written; 1 a file exists (without --force) or cannot be written; 2 a bad
// option. Errors go to `err`.
int RunCertsInit(const auth::CertsInitOptions& options, std::ostream& out, std::ostream& err);

// As RunCertsInit, for one worker's certificate.
int RunCertsAddWorker(const auth::AddWorkerOptions& options, std::ostream& out, std::ostream& err);

// The flags of the coordinator, the workers and the CLI for files in `dir` (what RunCertsInit
// prints after the list of files).
std::string CertsUsage(const std::string& dir);

}  // namespace geotrain::cli
