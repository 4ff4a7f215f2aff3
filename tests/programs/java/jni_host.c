// SPDX-License-Identifier: Apache-2.0
/*
 * A C program that runs Java code by JNI, as an application embedding a JVM does:
 * `jni_host LIBJVM CLASSPATH SECONDS` loads the libjvm.so given, creates a JVM on its main
 * thread (JNI_CreateJavaVM), registers host_native_burn's wrapper as
 * rover.test.JniHost.nativeBurn, prints "ready" and calls JniHost.run(SECONDS) from
 * host_call_java (tests/programs/java/JniHost.java); the native method burns CPU in
 * host_native_burn, then calls JniHost.inner from host_call_back. A profile must show
 * host_call_java (and main) under the Java frames, host_native_burn above them, and
 * JniHost.inner above host_call_back (tests/integration/test_java.c).
 * Built against JDK 17's jni.h; the JNI it uses is the same in every JDK since 8.
 */
#include <dlfcn.h>
#include <jni.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef jint(JNICALL *create_vm_fn)(JavaVM **, void **, void *);

static volatile double sink;
static jmethodID inner;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void host_native_burn(double seconds)
{
	double end = now_s() + seconds;

	while (now_s() < end)
		for (int i = 0; i < 1000; i++)
			sink = sink * 1.0000001 + 1.0;
}

jlong host_call_back(JNIEnv *env, jclass cls, jlong ms)
{
	return (*env)->CallStaticLongMethod(env, cls, inner, ms);
}

static void JNICALL native_burn(JNIEnv *env, jclass cls, jlong ms)
{
	host_native_burn((double)ms / 1000.0);
	sink += (double)host_call_back(env, cls, ms / 2);
}

int host_call_java(JNIEnv *env, jclass cls, jmethodID run, jlong seconds)
{
	(*env)->CallStaticVoidMethod(env, cls, run, seconds);
	return (*env)->ExceptionCheck(env) ? -1 : 0;
}

int main(int argc, char **argv)
{
	static JNINativeMethod natives[] = { { "nativeBurn", "(J)V", (void *)native_burn } };
	char cp[4096];
	JavaVMOption opt[1] = { { .optionString = cp } };
	JavaVMInitArgs args = { .version = JNI_VERSION_1_8, .nOptions = 1, .options = opt };
	create_vm_fn create;
	jmethodID run;
	JavaVM *vm;
	JNIEnv *env;
	jclass cls;
	void *h;

	if (argc != 4) {
		fprintf(stderr, "usage: %s LIBJVM CLASSPATH SECONDS\n", argv[0]);
		return 2;
	}
	snprintf(cp, sizeof(cp), "-Djava.class.path=%s", argv[2]);
	h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	create = h ? (create_vm_fn)dlsym(h, "JNI_CreateJavaVM") : NULL;
	if (!create) {
		fprintf(stderr, "%s: %s\n", argv[1], dlerror());
		return 1;
	}
	if (create(&vm, (void **)&env, &args) != JNI_OK) {
		fprintf(stderr, "JNI_CreateJavaVM failed\n");
		return 1;
	}
	cls = (*env)->FindClass(env, "rover/test/JniHost");
	if (!cls || (*env)->RegisterNatives(env, cls, natives, 1) ||
	    !(run = (*env)->GetStaticMethodID(env, cls, "run", "(J)V")) ||
	    !(inner = (*env)->GetStaticMethodID(env, cls, "inner", "(J)J"))) {
		fprintf(stderr, "rover/test/JniHost: not found in %s\n", argv[2]);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	return host_call_java(env, cls, run, atoll(argv[3])) ? 1 : 0;
}
