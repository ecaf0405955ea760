"""NVML index -> CUDA index, by UUID and CUDA_VISIBLE_DEVICES, without touching CUDA."""

from nbgpumon._sources.cuda_devices import map_by_uuid, map_cuda_indices

UUIDS = ["GPU-aaaa1111", "GPU-bbbb2222", "GPU-cccc3333"]


def test_unset_means_every_device_in_order():
    assert map_cuda_indices(UUIDS, None) == ({0: 0, 1: 1, 2: 2}, "")


def test_integer_entries_renumber_the_visible_devices():
    assert map_cuda_indices(UUIDS, "2,0")[0] == {2: 0, 0: 1}


def test_uuid_prefixes_are_matched():
    assert map_cuda_indices(UUIDS, "GPU-bbbb,GPU-aaaa1111")[0] == {1: 0, 0: 1}


def test_parsing_stops_at_the_first_invalid_entry_as_cuda_does():
    assert map_cuda_indices(UUIDS, "1,7,0")[0] == {1: 0}
    assert map_cuda_indices(UUIDS, "")[0] == {}
    assert map_cuda_indices(UUIDS, "0,0")[0] == {0: 0}


def test_mig_entries_are_reported_not_guessed():
    mapping, note = map_cuda_indices(UUIDS, "MIG-1234")
    assert mapping == {} and "MIG" in note


def test_exact_mapping_from_the_frameworks_uuids():
    assert map_by_uuid(UUIDS, ["cccc3333", "GPU-AAAA1111"]) == {2: 0, 0: 1}


def test_an_empty_value_or_minus_one_hides_every_device():
    assert map_cuda_indices(UUIDS, "") == ({}, "")
    assert map_cuda_indices(UUIDS, "-1") == ({}, "")
    assert map_cuda_indices(UUIDS, "1,-1,0")[0] == {1: 0}  # -1 ends the list, as in CUDA


def test_one_device_by_index_by_uuid_or_by_a_unique_prefix_is_cuda0():
    for visible in ("1", " 1 ", "GPU-bbbb2222", "GPU-bbbb"):
        assert map_cuda_indices(UUIDS, visible)[0] == {1: 0}, visible


def test_reversed_order_maps_each_way():
    assert map_cuda_indices(UUIDS[:2], "1,0")[0] == {1: 0, 0: 1}


def test_an_ambiguous_uuid_prefix_or_a_bare_prefix_matches_nothing():
    twins = ["GPU-abcd1111", "GPU-abcd2222"]
    assert map_cuda_indices(twins, "GPU-abcd")[0] == {}
    assert map_cuda_indices(twins, "GPU-")[0] == {}


def test_the_uuid_mapping_leaves_out_a_device_the_framework_cannot_see():
    assert map_by_uuid(UUIDS[:2], ["GPU-bbbb2222"]) == {1: 0}
