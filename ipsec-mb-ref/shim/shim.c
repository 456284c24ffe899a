/*
 * The few intel-ipsec-mb 1.3 operations ipsec-mb-ref needs, as plain
 * functions over plain structs: most IMB_* names are macros that call
 * through the function-pointer table inside IMB_MGR, and IMB_JOB is a
 * large struct of unions; keeping both on the C side means the Rust code
 * mirrors no layout of the library's.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <intel-ipsec-mb.h>

#if IMB_VERSION_NUM < IMB_VERSION(1, 3, 0)
#error "ipsec-mb-ref needs intel-ipsec-mb 1.3 or later"
#endif

/* Hash codes shared with src/ffi.rs. */
enum { REF_SHA1 = 1, REF_SHA256 = 2, REF_SHA384 = 3 };

/* The error number for "this CPU cannot run that manager", shared with
 * src/ffi.rs (negative: the library's own numbers are positive). */
enum { REF_ERR_CPU = -2 };

/* One cipher + HMAC job, as src/ffi.rs lays it out (repr(C)). */
struct ref_job {
        const void *enc_keys;
        const void *dec_keys;
        const uint8_t *ipad;
        const uint8_t *opad;
        const uint8_t *iv;
        uint8_t *buf;
        uint8_t *tag;
        uint64_t key_len;
        uint64_t cipher_offset;
        uint64_t cipher_len;
        uint64_t hash_offset;
        uint64_t hash_len;
        uint64_t tag_len;
        uint64_t user;
        uint32_t hash;
        uint32_t hash_first;
        uint32_t decrypt;
};

const char *ref_version(void)
{
        return imb_get_version_str();
}

/*
 * A manager initialised for `arch` (an IMB_ARCH value; IMB_ARCH_NONE:
 * the best this CPU runs, reported through *arch_out). NULL on failure,
 * with the library's error number in *err.
 */
IMB_MGR *ref_mgr_new(int arch, int *arch_out, int *err)
{
        IMB_MGR *m = alloc_mb_mgr(0);
        IMB_ARCH picked = IMB_ARCH_NONE;

        *err = 0;
        if (m == NULL) {
                *err = imb_get_errno(NULL);
                if (*err == 0)
                        *err = -1;
                return NULL;
        }
        /*
         * intel-ipsec-mb 1.3 initialises a manager for an architecture the
         * CPU lacks without complaint, then crashes on a NULL kernel
         * pointer (init_mb_mgr_avx512 on a CPU without AVX-512): refuse
         * first, from the features alloc_mb_mgr detected.
         */
        uint64_t needs = 0;

        switch (arch) {
        case IMB_ARCH_SSE:
                needs = IMB_CPUFLAGS_SSE;
                break;
        case IMB_ARCH_AVX:
                needs = IMB_CPUFLAGS_AVX;
                break;
        case IMB_ARCH_AVX2:
                needs = IMB_CPUFLAGS_AVX2;
                break;
        case IMB_ARCH_AVX512:
                needs = IMB_CPUFLAGS_AVX512;
                break;
        default:
                break;
        }
        if ((m->features & needs) != needs) {
                free_mb_mgr(m);
                *err = REF_ERR_CPU;
                return NULL;
        }
        switch (arch) {
        case IMB_ARCH_NONE:
                init_mb_mgr_auto(m, &picked);
                break;
        case IMB_ARCH_SSE:
                init_mb_mgr_sse(m);
                picked = IMB_ARCH_SSE;
                break;
        case IMB_ARCH_AVX:
                init_mb_mgr_avx(m);
                picked = IMB_ARCH_AVX;
                break;
        case IMB_ARCH_AVX2:
                init_mb_mgr_avx2(m);
                picked = IMB_ARCH_AVX2;
                break;
        case IMB_ARCH_AVX512:
                init_mb_mgr_avx512(m);
                picked = IMB_ARCH_AVX512;
                break;
        default:
                free_mb_mgr(m);
                *err = -1;
                return NULL;
        }
        *err = imb_get_errno(m);
        if (*err != 0 || picked == IMB_ARCH_NONE) {
                if (*err == 0)
                        *err = -1;
                free_mb_mgr(m);
                return NULL;
        }
        *arch_out = (int)picked;
        return m;
}

void ref_mgr_free(IMB_MGR *m)
{
        free_mb_mgr(m);
}

uint64_t ref_mgr_features(const IMB_MGR *m)
{
        return m->features;
}

int ref_errno(IMB_MGR *m)
{
        return imb_get_errno(m);
}

const char *ref_strerror(int err)
{
        return imb_get_strerror(err);
}

/* AES key expansion; enc and dec are 16-byte aligned, 240 bytes each. */
int ref_aes_keyexp(IMB_MGR *m, const uint8_t *key, size_t key_len, void *enc,
                   void *dec)
{
        switch (key_len) {
        case 16:
                IMB_AES_KEYEXP_128(m, key, enc, dec);
                return 0;
        case 24:
                IMB_AES_KEYEXP_192(m, key, enc, dec);
                return 0;
        case 32:
                IMB_AES_KEYEXP_256(m, key, enc, dec);
                return 0;
        default:
                return -1;
        }
}

/*
 * The HMAC inner and outer states (the digests of one block of key ^ ipad
 * and key ^ opad), in the form the HMAC jobs take; ipad and opad hold 64
 * bytes each. Keys longer than a block are hashed first (RFC 2104).
 */
int ref_hmac_pads(IMB_MGR *m, int hash, const uint8_t *key, size_t key_len,
                  uint8_t *ipad, uint8_t *opad)
{
        uint8_t block[IMB_SHA_384_BLOCK_SIZE];
        uint8_t hashed[IMB_SHA512_DIGEST_SIZE_IN_BYTES];
        size_t block_len = hash == REF_SHA384 ? IMB_SHA_384_BLOCK_SIZE
                                              : IMB_SHA1_BLOCK_SIZE;
        size_t i;

        if (hash != REF_SHA1 && hash != REF_SHA256 && hash != REF_SHA384)
                return -1;
        if (key_len > block_len) {
                if (hash == REF_SHA1) {
                        IMB_SHA1(m, key, key_len, hashed);
                        key_len = 20;
                } else if (hash == REF_SHA256) {
                        IMB_SHA256(m, key, key_len, hashed);
                        key_len = 32;
                } else {
                        IMB_SHA384(m, key, key_len, hashed);
                        key_len = 48;
                }
                key = hashed;
        }
        for (int pass = 0; pass < 2; pass++) {
                uint8_t pad = pass == 0 ? 0x36 : 0x5c;
                uint8_t *out = pass == 0 ? ipad : opad;

                memset(block, pad, block_len);
                for (i = 0; i < key_len; i++)
                        block[i] ^= key[i];
                if (hash == REF_SHA1)
                        IMB_SHA1_ONE_BLOCK(m, block, out);
                else if (hash == REF_SHA256)
                        IMB_SHA256_ONE_BLOCK(m, block, out);
                else
                        IMB_SHA384_ONE_BLOCK(m, block, out);
        }
        /* Best effort: the caller's buffers hold the secrets that matter. */
        memset(block, 0, sizeof(block));
        memset(hashed, 0, sizeof(hashed));
        __asm__ __volatile__("" : : "r"(block), "r"(hashed) : "memory");
        return 0;
}

/*
 * Fills the manager's next job from *d (AES-CBC encryption, or decryption
 * if d->decrypt, in place over buf[cipher_offset..][..cipher_len], HMAC
 * over buf[hash_offset..][..hash_len] into tag) and submits it. Returns a completed job or NULL; *err is the
 * library's error number if the submission itself failed.
 */
IMB_JOB *ref_submit(IMB_MGR *m, const struct ref_job *d, int *err)
{
        IMB_JOB *job = IMB_GET_NEXT_JOB(m);

        *err = 0;
        if (job == NULL) {
                *err = imb_get_errno(m);
                if (*err == 0)
                        *err = -1;
                return NULL;
        }
        job->cipher_mode = IMB_CIPHER_CBC;
        job->cipher_direction = d->decrypt ? IMB_DIR_DECRYPT : IMB_DIR_ENCRYPT;
        job->chain_order = d->hash_first ? IMB_ORDER_HASH_CIPHER
                                         : IMB_ORDER_CIPHER_HASH;
        job->enc_keys = d->enc_keys;
        job->dec_keys = d->dec_keys;
        job->key_len_in_bytes = d->key_len;
        job->src = d->buf;
        job->dst = d->buf + d->cipher_offset;
        job->cipher_start_src_offset_in_bytes = d->cipher_offset;
        job->msg_len_to_cipher_in_bytes = d->cipher_len;
        job->iv = d->iv;
        job->iv_len_in_bytes = 16;
        switch (d->hash) {
        case REF_SHA1:
                job->hash_alg = IMB_AUTH_HMAC_SHA_1;
                break;
        case REF_SHA256:
                job->hash_alg = IMB_AUTH_HMAC_SHA_256;
                break;
        default:
                job->hash_alg = IMB_AUTH_HMAC_SHA_384;
                break;
        }
        job->hash_start_src_offset_in_bytes = d->hash_offset;
        job->msg_len_to_hash_in_bytes = d->hash_len;
        job->u.HMAC._hashed_auth_key_xor_ipad = d->ipad;
        job->u.HMAC._hashed_auth_key_xor_opad = d->opad;
        job->auth_tag_output = d->tag;
        job->auth_tag_output_len_in_bytes = d->tag_len;
        job->user_data = (void *)(uintptr_t)d->user;
        job->user_data2 = NULL;
        /*
         * NULL means no job is complete yet; a job the library refuses comes
         * back completed with IMB_STATUS_INVALID_ARGS.
         */
        return IMB_SUBMIT_JOB(m);
}

IMB_JOB *ref_get_completed(IMB_MGR *m)
{
        return IMB_GET_COMPLETED_JOB(m);
}

IMB_JOB *ref_flush(IMB_MGR *m)
{
        return IMB_FLUSH_JOB(m);
}

/* The user value and IMB_STATUS of a job the manager returned. */
void ref_job_result(const IMB_JOB *job, uint64_t *user, int *status)
{
        *user = (uint64_t)(uintptr_t)job->user_data;
        *status = (int)job->status;
}
