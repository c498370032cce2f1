module benchserverprofile

go 1.22
