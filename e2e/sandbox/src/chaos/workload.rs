//! What the chaos run asks of the operator: a seeded mix of objects of the three kinds that talk to other
//! systems, then a change to a third of them and the deletion of another third.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::kinds::{Kind, app_spec, credential_spec, merged, project_spec};

/// One object of the run and what becomes of it.
#[derive(Clone, Debug)]
pub struct Planned {
    /// Its kind.
    pub kind: Kind,
    /// Its name (in the kind's sandbox namespace).
    pub name: String,
    /// The spec it is created with.
    pub spec: Value,
    /// The spec it is changed to during the run, if it is changed.
    pub changed: Option<Value>,
    /// Whether it is deleted during the run.
    pub deleted: bool,
}

impl Planned {
    /// The spec the object has at the end of the run.
    pub fn final_spec(&self) -> &Value {
        self.changed.as_ref().unwrap_or(&self.spec)
    }

    /// Whether a NebariApp ends with authentication on (and so owns a Keycloak client).
    pub fn has_auth(&self) -> bool {
        self.final_spec()["auth"]["enabled"] == json!(true)
    }
}

/// The Keycloak group a planned ManagedRancherProject binds (unique per object).
pub fn project_group(index: usize) -> String {
    format!("chaos_{index}")
}

/// `objects` objects from `seed`: 40 % NebariApps (half with auth, half with their own TLS listener), 35 %
/// ManagedRancherProjects (a group with members, a quota), 25 % KeystoneApplicationCredentials. One in three is
/// changed (auth turned on or off and a route added; a member and the quota changed; an access rule added, which
/// rotates the credential), another one in three deleted.
pub fn plan(seed: u64, objects: usize) -> Vec<Planned> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..objects)
        .map(|index| {
            let share = index % 20;
            let kind = match share {
                0..8 => Kind::NebariApp,
                8..15 => Kind::Project,
                _ => Kind::Credential,
            };
            let fate = rng.random_range(0..3u8);
            let (name, spec, change) = match kind {
                Kind::NebariApp => app(index, &mut rng),
                Kind::Project => project(index, &mut rng),
                _ => credential(index),
            };
            Planned {
                kind,
                name,
                changed: (fate == 1).then(|| merged(spec.clone(), change)),
                spec,
                deleted: fate == 2,
            }
        })
        .collect()
}

fn app(index: usize, rng: &mut StdRng) -> (String, Value, Value) {
    let name = format!("chaos-app-{index}");
    let auth = rng.random_bool(0.5);
    let tls = rng.random_bool(0.5);
    let spec = merged(
        app_spec(&name),
        json!({
            "routing": {"routes": [{"pathPrefix": "/"}], "tls": {"enabled": tls}},
            "auth": {"enabled": auth, "provider": "keycloak", "provisionClient": true},
        }),
    );
    let change = json!({
        "routing": {"routes": [{"pathPrefix": "/"}, {"pathPrefix": "/api"}]},
        "auth": {"enabled": !auth},
    });
    (name, spec, change)
}

fn project(index: usize, rng: &mut StdRng) -> (String, Value, Value) {
    let name = format!("chaos-project-{index}");
    // Members by username (`lookupByID: false`), as the sandbox's realm knows alice and bob.
    let mut members = vec![json!({"userIdentifier": "alice", "lookupByID": false})];
    if rng.random_bool(0.5) {
        members.push(json!({"userIdentifier": "bob", "lookupByID": false}));
    }
    let spec = merged(
        project_spec(&name, &project_group(index)),
        json!({"resourceQuotas": {"cpu": "2000m", "memory": "4Gi"}}),
    );
    let mut spec = spec;
    spec["keycloak"]["roleBindings"][0]["members"] = json!(members);
    let change = json!({
        "keycloak": {"roleBindings": [{"groupName": project_group(index), "rancherRole": "project-member",
                                       "members": [{"userIdentifier": "bob", "lookupByID": false}]}]},
        "resourceQuotas": {"cpu": "4000m", "memory": "8Gi"},
    });
    (name, spec, change)
}

fn credential(index: usize) -> (String, Value, Value) {
    let name = format!("ac-chaos-{index}");
    let change = json!({
        "accessRules": [{"service": "identity", "path": "/v3/auth/tokens", "method": "GET"}],
    });
    (name, credential_spec(), change)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_plan_and_the_mix_holds_every_kind_and_fate() {
        let plan_a = plan(42, 60);
        let plan_b = plan(42, 60);
        assert_eq!(
            plan_a
                .iter()
                .map(|p| (p.name.clone(), p.deleted, p.changed.is_some()))
                .collect::<Vec<_>>(),
            plan_b
                .iter()
                .map(|p| (p.name.clone(), p.deleted, p.changed.is_some()))
                .collect::<Vec<_>>()
        );
        for kind in [Kind::NebariApp, Kind::Project, Kind::Credential] {
            assert!(plan_a.iter().any(|p| p.kind == kind));
        }
        assert!(plan_a.iter().any(|p| p.deleted));
        assert!(plan_a.iter().any(|p| p.changed.is_some()));
        assert!(plan_a.iter().any(|p| p.kind == Kind::NebariApp && p.has_auth()));
        assert!(plan_a.iter().any(|p| p.kind == Kind::NebariApp && !p.has_auth()));
    }
}
