//! The multicast rule, against the real variables (one test: it sets the environment).

fn set(name: &str, value: Option<&str>) {
    // SAFETY: this test binary runs a single test, so no other thread reads the environment meanwhile.
    unsafe {
        match value {
            Some(v) => std::env::set_var(name, v),
            None => std::env::remove_var(name),
        }
    }
}

#[test]
fn multicast_is_forbidden_by_each_variable_in_order() {
    let names = ["NCCL_NVLS_ENABLE", "MSCCLPP_DISABLE_NVLS", "MSCCLPP_FORCE_DISABLE_NVLS"];
    for n in names {
        set(n, None);
    }
    assert_eq!(mscclpp_config::multicast_allowed(), Ok(()));

    for (name, value, forbids) in [
        ("NCCL_NVLS_ENABLE", "0", true),
        ("NCCL_NVLS_ENABLE", " Off ", true),
        ("NCCL_NVLS_ENABLE", "1", false),
        ("NCCL_NVLS_ENABLE", "2", false),
        ("NCCL_NVLS_ENABLE", "", false),
        ("MSCCLPP_DISABLE_NVLS", "1", true),
        ("MSCCLPP_DISABLE_NVLS", "true", true),
        ("MSCCLPP_DISABLE_NVLS", "0", false),
        ("MSCCLPP_DISABLE_NVLS", "maybe", false),
        ("MSCCLPP_FORCE_DISABLE_NVLS", "on", true),
        ("MSCCLPP_FORCE_DISABLE_NVLS", "off", false),
    ] {
        set(name, Some(value));
        let got = mscclpp_config::multicast_allowed();
        if forbids {
            let e = got.expect_err(&format!("{name}={value:?} forbids multicast"));
            assert_eq!((e.variable, e.value.as_str()), (name, value));
            assert!(e.to_string().contains(&format!("{name}={value}")), "{e}");
        } else {
            assert_eq!(got, Ok(()), "{name}={value:?}");
        }
        set(name, None);
    }

    // The first forbidding variable in table order is the one named.
    set("MSCCLPP_FORCE_DISABLE_NVLS", Some("1"));
    set("NCCL_NVLS_ENABLE", Some("0"));
    assert_eq!(mscclpp_config::multicast_allowed().map_err(|e| e.variable), Err("NCCL_NVLS_ENABLE"));
    set("NCCL_NVLS_ENABLE", None);
    assert_eq!(mscclpp_config::multicast_allowed().map_err(|e| e.variable), Err("MSCCLPP_FORCE_DISABLE_NVLS"));
}
