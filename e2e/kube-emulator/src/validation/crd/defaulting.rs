//! Dropping of non-nullable nulls and schema defaulting, as
//! apiextensions' `structuraldefaulting` does it.
//!
//! A property that is `null`, not `nullable` and has no default is removed. Defaults apply top-down: an
//! absent field, or a non-nullable null, gets a deep copy of its `default`, and the walk then continues
//! into that copy, so nested defaults apply only under parents that exist or were themselves defaulted.

use serde_json::Value;

use super::schema::{Additional, SchemaNode};

/// Removes the nulls of properties that are neither `nullable` nor defaulted.
pub fn drop_non_nullable_nulls(value: &mut Value, schema: &SchemaNode) {
    match value {
        Value::Object(map) => {
            map.retain(|key, v| {
                !(v.is_null()
                    && schema
                        .properties
                        .get(key)
                        .is_some_and(|p| p.default.is_none() && !p.nullable))
            });
            for (key, v) in map.iter_mut() {
                if let Some(child) = schema.child(key) {
                    drop_non_nullable_nulls(v, child);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref() {
                items
                    .iter_mut()
                    .for_each(|item| drop_non_nullable_nulls(item, item_schema));
            }
        }
        _ => {}
    }
}

fn is_non_nullable_null(value: &Value, schema: &SchemaNode) -> bool {
    value.is_null() && !schema.nullable
}

/// Applies `default`s top-down.
pub fn apply_defaults(value: &mut Value, schema: &SchemaNode) {
    if !schema.has_defaults_below {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, prop) in &schema.properties {
                let Some(default) = &prop.default else { continue };
                let missing = map.get(key).is_none_or(|v| is_non_nullable_null(v, prop));
                if missing {
                    map.insert(key.clone(), default.clone());
                }
            }
            for (key, v) in map.iter_mut() {
                if let Some(prop) = schema.properties.get(key) {
                    apply_defaults(v, prop);
                } else if let Additional::Schema(additional) = &schema.additional {
                    if let Some(default) = &additional.default
                        && is_non_nullable_null(v, additional)
                    {
                        *v = default.clone();
                    }
                    apply_defaults(v, additional);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for item in items.iter_mut() {
                    if let Some(default) = &item_schema.default
                        && is_non_nullable_null(item, item_schema)
                    {
                        *item = default.clone();
                    }
                    apply_defaults(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> SchemaNode {
        SchemaNode::compile(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "mode": {"type": "string", "default": "fast"},
                        "note": {"type": "string"},
                        "keep": {"type": "string", "nullable": true},
                        "tls": {"type": "object", "default": {}, "properties": {"enabled": {"type": "boolean", "default": true}}},
                        "auth": {"type": "object", "properties": {"provider": {"type": "string", "default": "keycloak"}}},
                        "routes": {"type": "array", "items": {"type": "object", "properties": {"pathType": {"type": "string", "default": "PathPrefix"}}}}
                    }
                }
            }
        }))
        .expect("compiles")
    }

    #[test]
    fn nulls_drop_unless_nullable_or_defaulted() {
        let s = schema();
        let mut obj = json!({"spec": {"note": null, "keep": null, "mode": null}});
        drop_non_nullable_nulls(&mut obj, &s);
        assert_eq!(obj, json!({"spec": {"keep": null, "mode": null}}));
        apply_defaults(&mut obj, &s);
        assert_eq!(
            obj["spec"]["mode"], "fast",
            "a non-nullable null with a default is defaulted"
        );
        assert_eq!(obj["spec"]["keep"], Value::Null, "nullable keeps its null");
    }

    #[test]
    fn defaults_apply_top_down_only_under_present_or_defaulted_parents() {
        let s = schema();
        let mut obj = json!({"spec": {"routes": [{}, {"pathType": "Exact"}]}});
        apply_defaults(&mut obj, &s);
        assert_eq!(
            obj,
            json!({"spec": {
                "mode": "fast",
                "tls": {"enabled": true},
                "routes": [{"pathType": "PathPrefix"}, {"pathType": "Exact"}]
            }}),
            "tls is defaulted and then gets its own nested default; auth is absent so provider is not defaulted"
        );
        let mut with_auth = json!({"spec": {"auth": {}}});
        apply_defaults(&mut with_auth, &s);
        assert_eq!(with_auth["spec"]["auth"], json!({"provider": "keycloak"}));
        let mut no_spec = json!({});
        apply_defaults(&mut no_spec, &s);
        assert_eq!(no_spec, json!({}));
    }

    #[test]
    fn defaults_are_deep_copies() {
        let s = schema();
        let mut a = json!({"spec": {}});
        apply_defaults(&mut a, &s);
        a["spec"]["tls"]["enabled"] = json!(false);
        let mut b = json!({"spec": {}});
        apply_defaults(&mut b, &s);
        assert_eq!(b["spec"]["tls"]["enabled"], true);
    }
}
