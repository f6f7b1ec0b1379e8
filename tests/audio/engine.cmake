# The local audio engines (server/audio/engine): decoding, synthesis, recognition.
# Included from tests/CMakeLists.txt; the suites need only switchyard_audio and Debian's
# engine data (pocketsphinx-en-us, pocketsphinx-testdata) and the ffmpeg program for fixtures.
switchyard_test(tst_speech SOURCES audio/tst_speech.cpp audio/AudioTestUtil.h
    LIBS switchyard_audio TIMEOUT 120)
switchyard_test(tst_audio_decoder SOURCES audio/tst_audio_decoder.cpp audio/AudioTestUtil.h
    LIBS switchyard_audio TIMEOUT 120)
