//! End-to-end tests of the KeystoneApplicationCredential controller: the real `manager` process against the API
//! emulator and a real OpenStack Keystone (installed from PyPI by `e2e/keystone/install.sh`; one Keystone per
//! test process, each test with its own service user, namespace and emulator). One module per user story.

mod support;

mod create;
mod deletion;
mod failures;
mod namespaced;
mod orphans;
mod restart;
mod rotation;
mod side_by_side;
mod takeover;
mod tls;
mod validation;
