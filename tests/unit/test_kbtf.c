// SPDX-License-Identifier: Apache-2.0
/*
 * The worker's scan of the kernel's BTF for the stack programs' field offsets
 * (worker/kbtf.c): on this kernel against libbpf's own reading of the same BTF, on BTF made
 * here with the shapes the kernel uses (anonymous unions, typedefs, bitfields), and on every
 * cut and flipped byte of it. And the reason it exists: the ON_CPU object carries no CO-RE
 * relocation, so libbpf never parses the kernel's whole BTF to load it.
 */
#define _GNU_SOURCE
#include <bpf/btf.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker/kbtf.h"

/* The offset in bytes of a member path as libbpf's BTF sees it (anonymous members searched). */
static int ref_member(const struct btf *btf, __u32 id, const char *name, __u32 *ret_bits,
		      __u32 *ret_type)
{
	const struct btf_type *t = btf__type_by_id(btf, btf__resolve_type(btf, id));
	const struct btf_member *m = btf_members(t);

	for (int i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);
		__u32 bits = btf_member_bit_offset(t, i), inner;

		if (!*n) {
			if (ref_member(btf, m->type, name, &inner, ret_type)) {
				*ret_bits = bits + inner;
				return 1;
			}
			continue;
		}
		if (!strcmp(n, name)) {
			*ret_bits = bits;
			*ret_type = m->type;
			return 1;
		}
	}
	return 0;
}

static long ref_offset(const struct btf *btf, const char *type, const char *path)
{
	__s32 id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	char buf[128], *save = NULL;
	__u32 bits = 0, at, mtype = (__u32)id;

	cr_assert_gt(id, 0, "struct %s in the kernel's BTF", type);
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *c = strtok_r(buf, ".", &save); c; c = strtok_r(NULL, ".", &save)) {
		if (!ref_member(btf, mtype, c, &at, &mtype))
			return -1;
		bits += at;
	}
	return bits / 8;
}

Test(kbtf, the_kernels_offsets_are_libbpfs)
{
	struct btf *btf = btf__load_vmlinux_btf();
	struct kofs k;
	const struct {
		const char *type, *path;
		const uint32_t *got;
	} fields[] = {
		{ "task_struct", "real_cred", &k.task_real_cred },
		{ "task_struct", "mm", &k.task_mm },
		{ "task_struct", "thread.fsbase", &k.task_fsbase },
		{ "cred", "uid", &k.cred_uid },
		{ "cred", "euid", &k.cred_euid },
		{ "cred", "suid", &k.cred_suid },
		{ "cred", "gid", &k.cred_gid },
		{ "cred", "egid", &k.cred_egid },
		{ "cred", "sgid", &k.cred_sgid },
		{ "cred", "cap_permitted", &k.cred_cap_permitted },
		{ "mm_struct", "flags", &k.mm_flags },
		{ "vm_area_struct", "vm_start", &k.vma_start },
		{ "vm_area_struct", "vm_pgoff", &k.vma_pgoff },
		{ "vm_area_struct", "vm_file", &k.vma_file },
		{ "file", "f_inode", &k.file_inode },
		{ "inode", "i_size", &k.inode_size },
	};

	cr_assert_not_null(btf, "the kernel's BTF through libbpf");
	memset(&k, 0xa5, sizeof(k));
	cr_assert_eq(kbtf_kofs(KBTF_PATH, &k), 0);
	cr_assert_eq(sizeof(fields) / sizeof(fields[0]), sizeof(k) / sizeof(uint32_t),
		     "every field of struct kofs is checked");
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		long want = ref_offset(btf, fields[i].type, fields[i].path);

		cr_expect_eq((long)*fields[i].got, want, "%s.%s: %u, libbpf %ld", fields[i].type,
			     fields[i].path, *fields[i].got, want);
	}
	/* Fields inside anonymous unions and structures: what a flat scan would get wrong. */
	cr_expect_neq(k.vma_pgoff, 0);
	cr_expect_gt(k.task_fsbase, 1000, "thread is far into task_struct");
	btf__free(btf);
}

/*
 * BTF with the kernel's shapes: task_struct { int pad; union { struct { long a; void *mm; };
 * long b; }; typedef'd const pointer real_cred; unsigned bits:3 (a bitfield); struct
 * thread_struct thread { char x[24]; long fsbase; } }.
 */
static void *made_btf(__u32 *ret_len)
{
	struct btf *b = btf__new_empty();
	int i_int, i_long, i_char, i_void_ptr, i_anon_s, i_anon_u, i_cptr, i_td, i_arr, i_thread,
		i_task;
	const void *raw;
	void *copy;

	cr_assert_not_null(b);
	i_int = btf__add_int(b, "int", 4, BTF_INT_SIGNED);
	i_long = btf__add_int(b, "long", 8, BTF_INT_SIGNED);
	i_char = btf__add_int(b, "char", 1, 0);
	i_void_ptr = btf__add_ptr(b, 0);
	i_anon_s = btf__add_struct(b, NULL, 16);
	btf__add_field(b, "a", i_long, 0, 0);
	btf__add_field(b, "mm", i_void_ptr, 64, 0);
	i_anon_u = btf__add_union(b, NULL, 16);
	btf__add_field(b, NULL, i_anon_s, 0, 0);
	btf__add_field(b, "b", i_long, 0, 0);
	i_cptr = btf__add_const(b, i_void_ptr);
	i_td = btf__add_typedef(b, "cred_ptr", i_cptr);
	i_arr = btf__add_array(b, i_int, i_char, 24);
	i_thread = btf__add_struct(b, "thread_struct", 32);
	btf__add_field(b, "x", i_arr, 0, 0);
	btf__add_field(b, "fsbase", i_long, 192, 0);
	i_task = btf__add_struct(b, "task_struct", 72);
	btf__add_field(b, "pad", i_int, 0, 0);
	btf__add_field(b, NULL, i_anon_u, 64, 0);
	btf__add_field(b, "real_cred", i_td, 192, 0);
	btf__add_field(b, "bits", i_int, 256, 3);
	btf__add_field(b, "thread", i_thread, 320, 0);
	cr_assert_gt(i_task, 0);
	raw = btf__raw_data(b, ret_len);
	copy = malloc(*ret_len);
	memcpy(copy, raw, *ret_len);
	btf__free(b);
	return copy;
}

Test(kbtf, anonymous_members_typedefs_and_nesting_are_followed)
{
	__u32 len;
	uint8_t *raw = made_btf(&len);
	uint32_t mm = 0, cred = 0, fs = 0, none = 0;
	const char *missing;
	const struct kbtf_want want[] = {
		{ "task_struct", "mm", 8, 8, &mm, 0 },
		{ "task_struct", "real_cred", 8, 8, &cred, 0 },
		{ "task_struct", "thread.fsbase", 8, 8, &fs, 0 },
		{ "task_struct", "thread.nothere", 8, 8, &none, 1 },
	};

	cr_assert_eq(kbtf_find(raw, len, want, 4, &missing), 0);
	cr_expect_eq(mm, 16, "8 (the union) + 8 (inside the anonymous struct): %u", mm);
	cr_expect_eq(cred, 24);
	cr_expect_eq(fs, 40 + 24);
	cr_expect_eq(none, KOFS_NONE, "an optional field missing");
	free(raw);
}

Test(kbtf, missing_fields_bitfields_and_wrong_sizes_are_named)
{
	__u32 len;
	uint8_t *raw = made_btf(&len);
	uint32_t v = 0;
	const char *missing;
	struct kbtf_want w = { "task_struct", "nothere", 8, 8, &v, 0 };

	cr_expect_eq(kbtf_find(raw, len, &w, 1, &missing), -ENOENT);
	cr_expect_str_eq(missing, "nothere");
	w.path = "bits";
	w.size_min = 4;
	w.size_max = 4;
	cr_expect_eq(kbtf_find(raw, len, &w, 1, &missing), -ERANGE, "a bitfield has no offset");
	w.path = "mm";
	cr_expect_eq(kbtf_find(raw, len, &w, 1, &missing), -ERANGE, "8 bytes, 4 wanted");
	w.type = "cred";
	w.path = "uid";
	cr_expect_eq(kbtf_find(raw, len, &w, 1, &missing), -ENOENT, "no struct cred");
	free(raw);
}

Test(kbtf, every_cut_and_every_flipped_byte_is_an_error_or_an_answer)
{
	__u32 len;
	uint8_t *raw = made_btf(&len), *bad = malloc(len);
	uint32_t mm, cred, fs;
	const char *missing;
	const struct kbtf_want want[] = {
		{ "task_struct", "mm", 8, 8, &mm, 0 },
		{ "task_struct", "real_cred", 8, 8, &cred, 0 },
		{ "task_struct", "thread.fsbase", 8, 8, &fs, 0 },
	};
	int errs = 0;

	for (__u32 cut = 0; cut < len; cut++) {
		/* A copy of exactly cut bytes: a read past it is one the sanitizers see. */
		uint8_t *c = malloc(cut ? cut : 1);

		memcpy(c, raw, cut);
		errs += kbtf_find(c, cut, want, 3, &missing) != 0;
		free(c);
	}
	cr_expect_eq(errs, (int)len, "no cut BTF is read whole");
	for (__u32 i = 0; i < len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(bad, raw, len);
			bad[i] ^= (uint8_t)(1u << bit);
			(void)kbtf_find(bad, len, want, 3, &missing);
			/* A byte of the wanted names or values may change the answer, never crash. */
		}
		memcpy(bad, raw, len);
		bad[i] = 0xff;
		(void)kbtf_find(bad, len, want, 3, &missing);
	}
	free(bad);
	free(raw);
}

/* The .BTF.ext header's CO-RE relocation bytes of a BPF object (0 when it has none). */
static uint32_t core_relo_len(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	uint32_t len = 0;

	cr_assert_geq(fd, 0, "%s", path);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(e);
	cr_assert_eq(elf_getshdrstrndx(e, &shstrndx), 0);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		uint32_t hdr_len;

		gelf_getshdr(scn, &sh);
		if (strcmp(elf_strptr(e, shstrndx, sh.sh_name), ".BTF.ext"))
			continue;
		d = elf_getdata(scn, NULL);
		cr_assert(d && d->d_size >= 8);
		memcpy(&hdr_len, (const uint8_t *)d->d_buf + 4, 4);
		/* magic, version, flags, hdr_len, then func, line and (32 bytes on) CO-RE info */
		if (hdr_len >= 32 && d->d_size >= 32)
			memcpy(&len, (const uint8_t *)d->d_buf + 28, 4);
	}
	elf_end(e);
	close(fd);
	return len;
}

/* The build directory: $ROVER_BUILD, else the runner's (OUT/tests/unit/runner). */
static void build_dir(char *ret, size_t size)
{
	const char *build = getenv("ROVER_BUILD");
	ssize_t n;

	if (build) {
		snprintf(ret, size, "%s", build);
		return;
	}
	n = readlink("/proc/self/exe", ret, size - 1);
	cr_assert_gt(n, 0);
	ret[n] = '\0';
	*strrchr(ret, '/') = '\0';
	cr_assert_lt(strlen(ret) + sizeof("/../.."), size);
	strcat(ret, "/../..");
}

Test(kbtf, the_on_cpu_object_needs_no_kernel_btf_parse)
{
	char build[400], path[512];

	build_dir(build, sizeof(build));
	snprintf(path, sizeof(path), "%s/oncpu.bpf.o", build);
	/*
	 * A CO-RE read in the ON_CPU program has libbpf parse the kernel's whole BTF at every
	 * load (about 19 ms of each one-shot's worker): read the field at a kofs offset instead.
	 */
	cr_expect_eq(core_relo_len(path), 0, "%s carries CO-RE relocations", path);
	snprintf(path, sizeof(path), "%s/offcpu.bpf.o", build);
	cr_expect_gt(core_relo_len(path), 0, "the reader finds OFF_CPU's (tp_btf parses anyway)");
}
