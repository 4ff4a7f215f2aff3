// SPDX-License-Identifier: Apache-2.0
/*
 * The forwarders the supervisor and the shipper link instead of gRPC, libcurl and libcapstone
 * (common/grpc/oap_load.c, supervisor/discovery/curl_load.c, shipper/capstone_load.c), before anything
 * is loaded: a caller that skipped the load gets an error, never a call through a null
 * pointer. Its own runner: the unit runner links the real libraries under the same names. Loading the module for
 * real is tests/integration/test_startup.c's and the backend suite's.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <capstone/capstone.h>
#include <curl/curl.h>

#include "common/Command.pb-c.h"
#include "common/grpc/oap.h"

Test(load, the_oap_client_fails_with_elibacc_before_its_module_is_loaded)
{
	struct oap_opts o = { .addr = "127.0.0.1:1" };
	Skywalking__V3__Commands req = SKYWALKING__V3__COMMANDS__INIT;
	ProtobufCMessage *ans = NULL;
	struct oap_status st = { 0 };

	errno = 0;
	cr_expect_null(oap_conn__new(&o));
	cr_expect_eq(errno, ELIBACC);
	errno = 0;
	cr_expect_null(oap_stream__open(NULL, "/x.Y/z"));
	cr_expect_eq(errno, ELIBACC);
	cr_expect_eq(oap_conn__call(NULL, "/x.Y/z", &req.base,
				    &skywalking__v3__commands__descriptor, &ans, &st),
		     -ELIBACC);
	cr_expect_null(ans);
	cr_expect_neq(st.code, 0);
	cr_expect(strstr(st.text, "not loaded"), "status text: %s", st.text);
	cr_expect_eq(oap_stream__send(NULL, &req.base), -ELIBACC);
	cr_expect_eq(oap_stream__send_packed(NULL, "", 0), -ELIBACC);
	cr_expect_eq(oap_stream__finish(NULL, &skywalking__v3__commands__descriptor, &ans, &st),
		     -ELIBACC);
	oap_conn__free(NULL);
}

/* This runner lives in build/tests/unit/, where no module is: the error names where it looked. */
Test(load, a_missing_module_is_named_by_its_path)
{
	char why[512] = "";

	cr_expect_eq(oap__load(why, sizeof(why)), -ENOENT);
	cr_expect(strstr(why, "/tests/unit/" OAP_MODULE), "why: %s", why);
	errno = 0;
	cr_expect_null(oap_conn__new(&(struct oap_opts){ .addr = "127.0.0.1:1" }));
	cr_expect_eq(errno, ELIBACC);
}

Test(load, curl_calls_fail_cleanly_before_libcurl_is_loaded)
{
	cr_expect_neq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	cr_expect_null(curl_easy_init());
	cr_expect_null(curl_multi_init());
	cr_expect_null(curl_slist_append(NULL, "a: b"));
	cr_expect_null(curl_easy_escape(NULL, "a b", 0));
	cr_expect_neq(curl_easy_setopt(NULL, CURLOPT_URL, "http://x/"), CURLE_OK);
	curl_easy_cleanup(NULL);
	curl_slist_free_all(NULL);
}

Test(load, capstone_calls_fail_cleanly_before_the_library_is_loaded)
{
	csh h = 0;
	const uint8_t code[] = { 0xc3 }, *p = code;
	size_t left = sizeof(code);
	uint64_t addr = 0;

	cr_expect_neq(cs_open(CS_ARCH_X86, CS_MODE_64, &h), CS_ERR_OK);
	cr_expect_null(cs_malloc(h));
	cr_expect_not(cs_disasm_iter(h, &p, &left, &addr, NULL));
	cr_expect_eq(left, sizeof(code), "nothing decoded");
	cr_expect_neq(cs_close(&h), CS_ERR_OK);
	cs_free(NULL, 1); /* no call through a null pointer */
}
